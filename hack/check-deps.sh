#!/usr/bin/env bash
# Fails if the nodelet binary links the full client-go clientset or API groups it does not use:
# each costs megabytes of resident memory (the lean client in internal/lib/kubeclient exists for this).
set -euo pipefail
cd "$(dirname "$0")/.."
allowed='^k8s.io/api/((core|coordination|authentication|authorization|node|certificates|storage)/v1|resource/v1beta1)$'
bad=$(go list -deps ./cmd/nodelet | grep -E '^k8s.io/client-go/(kubernetes|applyconfigurations|informers|listers)(/|$)|^k8s.io/kubernetes/|^k8s.io/api/' | grep -vE "$allowed" || true)
if [ -n "$bad" ]; then
	echo "cmd/nodelet links packages it must not (use internal/lib/kubeclient; never k8s.io/kubernetes):" >&2
	echo "$bad" >&2
	exit 1
fi
echo "dependency check: ok"
