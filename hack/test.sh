#!/usr/bin/env bash
# make test's body. The guest lane (make guest) touches neither the host's containerd nor its
# control plane and spends its time in QEMU, so it runs beside the host's steps instead of after
# them: make test takes the longer of the two, not their sum. The host's steps run in order and
# stop at the first failure, as before; the guest's output is kept in a file and printed at the end.
#
# Env: MAKE (the make to call; the Makefile passes its own), GUEST_LOG (default
# _output/guest/make-test.log).
set -euo pipefail
cd "$(dirname "$0")/.."
MAKE=${MAKE:-make}
GUEST_LOG=${GUEST_LOG:-_output/guest/make-test.log}

"$MAKE" unit real
# Everything both sides use is built once here, so that the two never build the same output at once.
"$MAKE" test-deps push-images build tools registries control-plane dra-driver csidriver images

mkdir -p "$(dirname "$GUEST_LOG")"
echo "test: the guest lane (make guest) runs beside the host's tests from $(date -u +%H:%M:%S); its output: $GUEST_LOG"
# A session of its own, so that an interrupted make test stops QEMU too.
setsid "$MAKE" guest >"$GUEST_LOG" 2>&1 &
guest_pid=$!
trap 'kill -- -$guest_pid 2>/dev/null || true' EXIT

host_rc=0
"$MAKE" e2e e2e-containerd16 bench-smoke conformance-smoke conformance-smoke-containerd16 || host_rc=$?
if ((host_rc != 0)); then
	echo "test: a host step failed (exit $host_rc); stopping the guest lane" >&2
	exit "$host_rc"
fi

if kill -0 "$guest_pid" 2>/dev/null; then
	echo "test: the host's steps passed at $(date -u +%H:%M:%S); waiting for the guest lane ($GUEST_LOG)"
fi
guest_rc=0
wait "$guest_pid" || guest_rc=$?
trap - EXIT
echo "test: the guest lane's output (make guest, exit $guest_rc):"
cat "$GUEST_LOG"
exit "$guest_rc"
