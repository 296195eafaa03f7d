#!/usr/bin/env bash
# containerd16.sh: hack/containerd.sh for the compatibility lane, Debian's containerd 1.6 and
# runc (RUNTIME=1) as the instance "containerd16": socket
# /run/nodelet-containerd16/containerd/containerd.sock, beside the project's containerd 2.
# `hack/containerd16.sh up` starts it (restarting it if its config changed) and imports the
# test images; stop|status|clean manage it.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export RUNTIME=1 INSTANCE=containerd16
if [[ ${1:-} == up ]]; then
	"$HERE/containerd.sh" restart-if-stale
	exec "$HERE/containerd.sh" images
fi
exec "$HERE/containerd.sh" "$@"
