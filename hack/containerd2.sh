#!/usr/bin/env bash
# containerd2.sh: hack/containerd.sh for the second runtime, containerd 2 and runc 1.3 built
# from test/runtime2 (RUNTIME=2): socket /run/nodelet-containerd2/containerd/containerd.sock.
# It never touches the containerd 1.6 instance. `hack/containerd2.sh up` builds, starts and
# imports the test images.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export RUNTIME=2
if [[ ${1:-} == up ]]; then
	"$HERE/containerd.sh" restart-if-stale
	exec "$HERE/containerd.sh" images
fi
exec "$HERE/containerd.sh" "$@"
