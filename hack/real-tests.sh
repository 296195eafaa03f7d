#!/usr/bin/env bash
# The package tests that need the real containerd (NODELET_E2E_CRI) or the real API server
# (NODELET_E2E_KUBECONFIG). `make real` runs them; `make test` runs `make real`. Each package
# gets the variables it reads; a test that skips here fails the run (nothing may skip silently).
set -euo pipefail
cd "$(dirname "$0")/.."

GO=${GO:-go}
CP=/var/lib/nodelet-cp
CRI=unix:///run/nodelet/containerd/containerd.sock
ADMIN=$CP/admin.kubeconfig

[[ -S ${CRI#unix://} ]] || { echo "containerd is not running: run make images" >&2; exit 1; }
[[ -f $ADMIN ]] || { echo "no control plane: run make control-plane" >&2; exit 1; }
# Node identities for the tests that act as a node (Node authorizer, NodeRestriction).
for node in nodetest apipods-test; do
	[[ -f $CP/node-$node.kubeconfig ]] || hack/control-plane.sh node-kubeconfig "$node" >/dev/null
done

log=$(mktemp)
trap 'rm -f "$log"' EXIT

# run NAME ENV... -- PACKAGES... -run PATTERN: runs and refuses any skipped test.
run() {
	local name=$1; shift
	local envs=()
	while [[ $1 != -- ]]; do envs+=("$1"); shift; done
	shift
	echo "==> $name"
	env "${envs[@]}" "$GO" test -count=1 -v "$@" 2>&1 | tee "$log" | grep -E '^(=== RUN|\s*--- |ok|FAIL|PASS|panic)' || true
	if grep -qE '^(FAIL|panic)|--- FAIL' "$log"; then
		# the failing tests' own lines (klog lines left out)
		grep -vE '^\s*[IW][0-9]{4} ' "$log" | tail -60 >&2
		echo "FAILED: $name (re-run: env ${envs[*]} $GO test -v $*)" >&2
		exit 1
	fi
	if grep -qE -- '--- SKIP' "$log"; then
		grep -E -B1 -A2 -- '--- SKIP' "$log" >&2
		echo "FAILED: $name skipped a real-runtime test (see above)" >&2
		exit 1
	fi
}

run "real containerd: runtime, images, logs, prober, stats, streaming" NODELET_E2E_CRI=$CRI -- \
	./internal/runtime/ ./internal/images/ ./internal/logs/ ./internal/prober/ ./internal/stats/ ./internal/streaming/ -run 'Real' \
	-skip 'CostAt50Pods' # a measurement (prints figures, asserts none), not a test: run it by hand
run "real API server: node registration, status and lease" \
	NODELET_E2E_KUBECONFIG=$CP/node-nodetest.kubeconfig NODELET_E2E_ADMIN_KUBECONFIG=$ADMIN -- \
	./internal/node/ -run 'TestE2E'
run "real API server: API pods, status sync, mirror pods" \
	NODELET_E2E_KUBECONFIG=$ADMIN NODELET_E2E_NODE_KUBECONFIG=$CP/node-apipods-test.kubeconfig -- \
	./internal/status/ -run 'E2E'
run "real API server: the kubelet API's authentication and authorization" NODELET_E2E_KUBECONFIG=$ADMIN -- \
	./internal/server/ -run 'TestAgainstAPIServer'
echo "==> every real-runtime and real-API-server package test passed"
