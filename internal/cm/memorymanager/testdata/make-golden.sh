#!/usr/bin/env bash
# make-golden.sh writes testdata/upstream_memory_manager_state: the memory_manager_state the REAL
# upstream kubelet (v1.33.4, _output/cp/bin/kubelet) writes with memoryManagerPolicy Static for
# one Guaranteed static pod, plus testdata/upstream_machine.json (what the test needs to rebuild
# the same machine: NUMA node 0's memory, the pod's UID).
#
# It runs the kubelet on a containerd of its own (hack/containerd.sh INSTANCE=memgolden) and
# under a cgroup root of its own, so it never sees, nor removes, anyone else's pods. Run it as
# root from the repository, holding the e2e lock:
#   flock /tmp/nodelet-e2e.lock internal/cm/memorymanager/testdata/make-golden.sh
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../../.." && pwd)
OUT=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
KUBELET=${KUBELET:-$REPO/_output/cp/bin/kubelet}
IMAGES=${IMAGES:-$REPO/_output/images}
export INSTANCE=memgolden
SOCKET=/run/nodelet-$INSTANCE/containerd/containerd.sock
WORK=$(mktemp -d /tmp/memgolden.XXXXXX)
CGROUP_ROOT=/nodelet-memgolden

cleanup() {
	[[ -n ${KPID:-} ]] && kill "$KPID" 2>/dev/null && wait "$KPID" 2>/dev/null || true
	"$REPO/hack/containerd.sh" clean >/dev/null 2>&1 || true
	for c in /sys/fs/cgroup/*"$CGROUP_ROOT"; do
		[[ -d $c ]] && find "$c" -depth -type d -exec rmdir {} \; 2>/dev/null || true
	done
}
trap cleanup EXIT

"$REPO/hack/containerd.sh" start >/dev/null
for tar in pause busybox; do
	ctr --address "$SOCKET" -n k8s.io images import "$IMAGES/$tar.tar" >/dev/null
done

mkdir -p "$WORK/manifests" "$WORK/root"
# The kubelet wants its cgroupRoot to exist in every hierarchy (cgroup v1 here).
for h in /sys/fs/cgroup/*/; do
	[[ -f $h/cgroup.procs ]] || continue
	mkdir -p "$h${CGROUP_ROOT#/}"
	if [[ -f $h/cpuset.cpus ]]; then
		cat "$h/cpuset.cpus" >"$h${CGROUP_ROOT#/}/cpuset.cpus"
		cat "$h/cpuset.mems" >"$h${CGROUP_ROOT#/}/cpuset.mems"
	fi
done
cat >"$WORK/config.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
containerRuntimeEndpoint: unix://$SOCKET
cgroupDriver: cgroupfs
cgroupRoot: $CGROUP_ROOT
failSwapOn: false
port: 10450
readOnlyPort: 0
healthzPort: 10448
staticPodPath: $WORK/manifests
makeIPTablesUtilChains: false
authentication:
  anonymous: {enabled: true}
  webhook: {enabled: false}
authorization: {mode: AlwaysAllow}
memoryManagerPolicy: Static
kubeReserved: {memory: 256Mi}
reservedMemory:
- numaNode: 0
  limits: {memory: 356Mi}
EOF
cat >"$WORK/manifests/golden.yaml" <<EOF
apiVersion: v1
kind: Pod
metadata: {name: golden, namespace: default}
spec:
  containers:
  - name: app
    image: nodelet.local/busybox:1.36
    imagePullPolicy: Never
    command: ["sleep", "3600"]
    resources: {limits: {cpu: 100m, memory: 64Mi}}
  - name: helper
    image: nodelet.local/busybox:1.36
    imagePullPolicy: Never
    command: ["sleep", "3600"]
    resources: {limits: {cpu: 100m, memory: 32Mi}}
EOF

"$KUBELET" --config="$WORK/config.yaml" --root-dir="$WORK/root" --hostname-override=memgolden --v=2 \
	>"$WORK/kubelet.log" 2>&1 &
KPID=$!
STATE=$WORK/root/memory_manager_state
for _ in $(seq 120); do
	if [[ -f $STATE ]] && grep -q '"helper"' "$STATE"; then
		break
	fi
	sleep 1
done
if ! grep -q '"helper"' "$STATE" 2>/dev/null; then
	echo "no assignment in $STATE after 2 minutes; kubelet log: $WORK/kubelet.log" >&2
	tail -30 "$WORK/kubelet.log" >&2
	exit 1
fi
sleep 2 # let the kubelet finish writing
cp "$STATE" "$OUT/upstream_memory_manager_state"
node0=$(awk '/MemTotal/ {printf "%d", $4 * 1024}' /sys/devices/system/node/node0/meminfo)
uid=$(grep -o '"entries":{"[^"]*"' "$STATE" | sed 's/.*{"//; s/"$//')
printf '{"node0MemoryBytes": %s, "podUID": "%s", "kubelet": "%s"}\n' "$node0" "$uid" "$("$KUBELET" --version)" \
	>"$OUT/upstream_machine.json"
echo "wrote $OUT/upstream_memory_manager_state (pod $uid)"
