#!/usr/bin/env bash
# Starts the local control plane and nodelet as its node.
#   hack/cluster.sh        start (or restart) nodelet joined to the local control plane
#   hack/cluster.sh stop   stop nodelet (the control plane keeps running: hack/control-plane.sh down)
set -euo pipefail
cd "$(dirname "$0")/.."

DIR=_output/cluster
PIDFILE=$DIR/nodelet.pid
LOG=$DIR/nodelet.log
NODE=$(hostname | tr '[:upper:]' '[:lower:]')
KUBECONFIG_ADMIN=/var/lib/nodelet-cp/admin.kubeconfig
KUBECONFIG_NODE=/var/lib/nodelet-cp/node-$NODE.kubeconfig

say() { printf '\n\033[1m==> %s\033[0m\n' "$*"; }
running() { [[ -f $PIDFILE ]] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null; }

stop_nodelet() {
	if running; then
		say "stopping nodelet (pid $(cat "$PIDFILE")); its pods keep running until it is back"
		kill "$(cat "$PIDFILE")" 2>/dev/null || true
	fi
	rm -f "$PIDFILE"
}

if [[ ${1:-} == stop ]]; then
	stop_nodelet
	exit 0
fi

hack/demo.sh stop # one nodelet owns the runtime's pods
stop_nodelet
hack/control-plane.sh up
hack/control-plane.sh node-kubeconfig "$NODE" >/dev/null
mkdir -p "$DIR/manifests"
say "starting nodelet as node $NODE (log $LOG)"
nohup _output/bin/nodelet --config examples/kubelet-config.yaml --kubeconfig "$KUBECONFIG_NODE" \
	--client-ca-file /var/lib/nodelet-cp/pki/ca.crt --pod-manifest-path "$PWD/$DIR/manifests" \
	--root-dir /var/lib/nodelet-cluster -v=2 >"$LOG" 2>&1 &
echo $! >"$PIDFILE"

for _ in $(seq 1 60); do
	if kubectl --kubeconfig "$KUBECONFIG_ADMIN" get node "$NODE" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null | grep -q True; then
		break
	fi
	running || { echo "nodelet exited; see $LOG" >&2; exit 1; }
	sleep 1
done
kubectl --kubeconfig "$KUBECONFIG_ADMIN" get nodes -o wide
say "ready. Try:"
cat <<EOT
  export KUBECONFIG=$KUBECONFIG_ADMIN
  kubectl run hello --image=nodelet.local/busybox:1.36 --image-pull-policy=IfNotPresent -- sh -c 'echo hi; sleep 3600'
  kubectl create deployment web --image=nodelet.local/testhelper:v1 --replicas=3 -- /testhelper serve --port 8080
  kubectl get pods -o wide
Static pods: drop manifests into $DIR/manifests. Stop with: make cluster-stop
EOT
