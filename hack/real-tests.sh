#!/usr/bin/env bash
# The package tests that need the real containerd (NODELET_E2E_CRI) or the real API server
# (NODELET_E2E_KUBECONFIG). They follow one rule: files named *_real_test.go, behind the build
# tag `real`, tests named TestReal*. `make real` runs them; `make test` runs `make real`. Each
# package gets the variables it reads; a test that skips here fails the run, and so does a
# package with *_real_test.go files that is not run below (nothing may stop running silently).
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

# Every package holding real tests must be run below, and every test in them named TestReal*.
runs=(./internal/runtime/kuberuntime/ ./internal/runtime/images/ ./internal/server/logs/ ./internal/pod/prober/ ./internal/server/stats/ ./internal/server/streaming/
	./internal/node/ ./internal/pod/status/ ./internal/server/)
real_files=$(git ls-files --cached --others --exclude-standard '*_real_test.go')
missing=$(comm -23 <(xargs -n1 dirname <<<"$real_files" | sed 's|^|./|; s|$|/|' | sort -u) \
	<(printf '%s\n' "${runs[@]}" | sort -u))
[[ -z $missing ]] || { echo "real tests in packages this script does not run: $missing" >&2; exit 1; }
misnamed=$(xargs grep -nE '^func Test' <<<"$real_files" | grep -v ':func TestReal' || true)
[[ -z $misnamed ]] || { echo "tests in *_real_test.go files must be named TestReal*: $misnamed" >&2; exit 1; }

log=$(mktemp)
trap 'rm -f "$log"' EXIT

# run NAME ENV... -- PACKAGES... -run PATTERN: runs and refuses any skipped test.
run() {
	local name=$1; shift
	local envs=()
	while [[ $1 != -- ]]; do envs+=("$1"); shift; done
	shift
	echo "==> $name"
	env "${envs[@]}" "$GO" test -tags real -count=1 -v "$@" 2>&1 | tee "$log" | grep -E '^(=== RUN|\s*--- |ok|FAIL|PASS|panic)' || true
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
	./internal/runtime/kuberuntime/ ./internal/runtime/images/ ./internal/server/logs/ ./internal/pod/prober/ ./internal/server/stats/ ./internal/server/streaming/ -run '^TestReal' \
	-skip 'CostAt50Pods' # a measurement (prints figures, asserts none), not a test: run it by hand
run "real API server: node registration, status and lease" \
	NODELET_E2E_KUBECONFIG=$CP/node-nodetest.kubeconfig NODELET_E2E_ADMIN_KUBECONFIG=$ADMIN -- \
	./internal/node/ -run '^TestReal'
run "real API server: API pods, status sync, mirror pods" \
	NODELET_E2E_KUBECONFIG=$ADMIN NODELET_E2E_NODE_KUBECONFIG=$CP/node-apipods-test.kubeconfig -- \
	./internal/pod/status/ -run '^TestReal'
run "real API server: the kubelet API's authentication and authorization" NODELET_E2E_KUBECONFIG=$ADMIN -- \
	./internal/server/ -run '^TestReal'
echo "==> every real-runtime and real-API-server package test passed"
