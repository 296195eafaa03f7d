#!/usr/bin/env bash
# control-plane.sh runs a real local Kubernetes v1.33.4 control plane (etcd, kube-apiserver,
# kube-controller-manager, kube-scheduler) that nodelet joins as a node.
#
#   hack/control-plane.sh build                 build the binaries into _output/cp/bin (cached)
#   hack/control-plane.sh build-conformance     build e2e_node.test and agnhost there (cached)
#   hack/control-plane.sh build-dra-driver      build upstream's DRA test driver there (cached)
#   hack/control-plane.sh up                    build, make certs, start everything, wait for /readyz
#   hack/control-plane.sh down                  stop everything (data and certs are kept)
#   hack/control-plane.sh status                show what runs
#   hack/control-plane.sh node-kubeconfig NAME  write /var/lib/nodelet-cp/node-NAME.kubeconfig
#   hack/control-plane.sh bootstrap-kubeconfig PATH  write a kubeconfig with the bootstrap token (TLS bootstrap)
#   hack/control-plane.sh restart-controller-manager  restart it (honours NODELET_CP_SIGNING_DURATION)
#   hack/control-plane.sh env                   print `export KUBECONFIG=...` for the admin
#   hack/control-plane.sh admin-token           print a bearer token of system:masters (node e2e suite)
#   hack/control-plane.sh clean                 down, then delete etcd's data (certs are kept)
#   hack/control-plane.sh stop-apiserver        stop only the API server (outage tests); start-apiserver
#
# Env: NODELET_CP_CONTROLLERS (kube-controller-manager --controllers, default "*"; conformance
# runs without the node lifecycle controller, as the node suite's own harness does),
# NODELET_CP_SIGNING_DURATION (--cluster-signing-duration of CSR certificates, default 8760h;
# the rotation test shortens it), NODELET_CP_FEATURE_GATES (the API server's --feature-gates,
# default none; conformance runs turn on UserNamespacesPodSecurityStandards, which its spec needs),
# NODELET_CP_DRA (default 1: Dynamic Resource Allocation on — the DynamicResourceAllocation gate in
# the API server, scheduler and controller manager, and resource.k8s.io/v1beta1 served; 0: off).
#
# State: /var/lib/nodelet-cp (pki/, etcd/, *.kubeconfig), logs: /var/log/nodelet-cp,
# pidfiles: /run/nodelet-cp. The API server listens on :6443 (all addresses).
set -euo pipefail

REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CP_BIN=$REPO_ROOT/_output/cp/bin
CP_DIR=/var/lib/nodelet-cp
CP_PKI=$CP_DIR/pki
CP_LOG=/var/log/nodelet-cp
CP_RUN=/run/nodelet-cp
API_PORT=6443
API_URL=https://127.0.0.1:$API_PORT
ADMIN_KUBECONFIG=$CP_DIR/admin.kubeconfig
TOKEN_FILE=$CP_PKI/tokens.csv
BOOTSTRAP_TOKEN_FILE=$CP_PKI/bootstrap-token
SERVICE_CIDR=10.96.0.0/16
READY_TIMEOUT=${READY_TIMEOUT:-120}
COMPONENTS=(etcd kube-apiserver kube-controller-manager kube-scheduler)

# shellcheck source=lib/cp-build.sh
source "$REPO_ROOT/hack/lib/cp-build.sh"
# shellcheck source=lib/cp-daemon.sh
source "$REPO_ROOT/hack/lib/cp-daemon.sh"

# dra_on: Dynamic Resource Allocation is on unless NODELET_CP_DRA=0. Beta and off by default
# in v1.33, it is on here for the DRA e2e tests and conformance specs; pods without claims never
# reach its scheduler plugin or controller, so the other tests see no difference.
dra_on() { [[ ${NODELET_CP_DRA:-1} != 0 ]]; }

# gate_flags [GATES]: the --feature-gates flag of a component: DRA's gate (when on) and GATES.
gate_flags() {
	local gates=()
	dra_on && gates+=(DynamicResourceAllocation=true)
	[[ -z ${1:-} ]] || gates+=("$1")
	((${#gates[@]})) || return 0
	local IFS=,
	echo "--feature-gates=${gates[*]}"
}

admin_kubectl() { kubectl --kubeconfig "$ADMIN_KUBECONFIG" "$@"; }

# host_ip prints the IPv4 address of the default-route interface (127.0.0.1 if none).
host_ip() {
	local dev ip
	dev=$(ip -4 route show default 2>/dev/null | awk '{for (i = 1; i < NF; i++) if ($i == "dev") {print $(i + 1); exit}}')
	[[ -n $dev ]] && ip=$(ip -4 -o addr show dev "$dev" | awk '{split($4, a, "/"); print a[1]; exit}')
	echo "${ip:-127.0.0.1}"
}

ensure_etcd_installed() {
	command -v etcd >/dev/null && return 0
	echo "==> installing etcd-server (apt)"
	export DEBIAN_FRONTEND=noninteractive
	apt-get install -y -qq etcd-server >/dev/null ||
		{ apt-get update -qq && apt-get install -y -qq etcd-server >/dev/null; }
}

# etcd_ports picks client/peer ports once per start: 2379/2380 unless another etcd holds them.
etcd_ports() {
	if daemon_pid etcd >/dev/null && [[ -f $CP_RUN/etcd.ports ]]; then
		cat "$CP_RUN/etcd.ports"
	elif port_open 2379 || port_open 2380; then
		echo "2479 2480"
	else
		echo "2379 2380"
	fi
}

start_etcd() {
	local client peer
	read -r client peer < <(etcd_ports)
	mkdir -p "$CP_RUN" && echo "$client $peer" >"$CP_RUN/etcd.ports"
	mkdir -p "$CP_DIR/etcd" && chmod 700 "$CP_DIR/etcd"
	daemon_start etcd "$(command -v etcd)" \
		--name nodelet-cp \
		--data-dir "$CP_DIR/etcd" \
		--listen-client-urls "http://127.0.0.1:$client" \
		--advertise-client-urls "http://127.0.0.1:$client" \
		--listen-peer-urls "http://127.0.0.1:$peer" \
		--initial-advertise-peer-urls "http://127.0.0.1:$peer" \
		--initial-cluster "nodelet-cp=http://127.0.0.1:$peer"
	wait_until 30 etcd curl -fsS "http://127.0.0.1:$client/health"
}

# ensure_token_file writes, once, a static token of a system:masters user: the node e2e
# suite authenticates to the API server with a bearer token only.
ensure_token_file() {
	[[ -s $TOKEN_FILE ]] && return 0
	mkdir -p "$CP_PKI"
	(umask 077 && echo "$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n'),e2e-admin,e2e-admin,system:masters" >"$TOKEN_FILE")
}

# ensure_audit_policy: the API server records one event per request of the bench's node
# (make bench counts a kubelet's API requests from it) and nothing else.
ensure_audit_policy() {
	cat >"$CP_DIR/audit-policy.yaml" <<'EOF_POLICY'
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [ResponseStarted, ResponseComplete, Panic]
rules:
- level: Metadata
  users: ["system:node:bench-node"]
- level: None
EOF_POLICY
}

start_apiserver() {
	local client
	read -r client _ <"$CP_RUN/etcd.ports"
	ensure_token_file
	ensure_audit_policy
	local -a extra
	read -ra extra < <(gate_flags "${NODELET_CP_FEATURE_GATES:-}") || true # none: EOF
	dra_on && extra+=(--runtime-config=resource.k8s.io/v1beta1=true)
	# No --kubelet-certificate-authority: nodelet serves :10250 with a self-signed cert.
	# ServiceAccount/TaintNodesByCondition admission are off as in the node e2e suite's own
	# services, so pods never race the "default" ServiceAccount.
	daemon_start kube-apiserver "$CP_BIN/kube-apiserver" \
		--etcd-servers "http://127.0.0.1:$client" \
		--bind-address 0.0.0.0 \
		--advertise-address "$(host_ip)" \
		--secure-port "$API_PORT" \
		--service-cluster-ip-range "$SERVICE_CIDR" \
		--authorization-mode Node,RBAC \
		--client-ca-file "$CP_PKI/ca.crt" \
		--token-auth-file "$TOKEN_FILE" \
		--enable-bootstrap-token-auth \
		--tls-cert-file "$CP_PKI/apiserver.crt" \
		--tls-private-key-file "$CP_PKI/apiserver.key" \
		--service-account-issuer https://kubernetes.default.svc.cluster.local \
		--service-account-key-file "$CP_PKI/sa.pub" \
		--service-account-signing-key-file "$CP_PKI/sa.key" \
		--kubelet-client-certificate "$CP_PKI/apiserver-kubelet-client.crt" \
		--kubelet-client-key "$CP_PKI/apiserver-kubelet-client.key" \
		--kubelet-preferred-address-types InternalIP,Hostname \
		--requestheader-client-ca-file "$CP_PKI/front-proxy-ca.crt" \
		--requestheader-allowed-names front-proxy-client \
		--requestheader-username-headers X-Remote-User \
		--requestheader-group-headers X-Remote-Group \
		--requestheader-extra-headers-prefix X-Remote-Extra- \
		--proxy-client-cert-file "$CP_PKI/front-proxy-client.crt" \
		--proxy-client-key-file "$CP_PKI/front-proxy-client.key" \
		--allow-privileged=true \
		"${extra[@]}" \
		--enable-admission-plugins NodeRestriction \
		--disable-admission-plugins ServiceAccount,TaintNodesByCondition \
		--audit-policy-file "$CP_DIR/audit-policy.yaml" \
		--audit-log-path "$CP_LOG/audit.log" --audit-log-format json \
		--audit-log-maxsize 100 --audit-log-maxbackup 1 \
		--profiling=false
	wait_until "$READY_TIMEOUT" kube-apiserver admin_kubectl get --raw /readyz
}

start_controllers() {
	local -a gates
	read -ra gates < <(gate_flags) || true
	daemon_start kube-controller-manager "$CP_BIN/kube-controller-manager" \
		--kubeconfig "$CP_DIR/controller-manager.kubeconfig" \
		--authentication-kubeconfig "$CP_DIR/controller-manager.kubeconfig" \
		--authorization-kubeconfig "$CP_DIR/controller-manager.kubeconfig" \
		--service-account-private-key-file "$CP_PKI/sa.key" \
		--root-ca-file "$CP_PKI/ca.crt" \
		--cluster-signing-cert-file "$CP_PKI/ca.crt" \
		--cluster-signing-key-file "$CP_PKI/ca.key" \
		--cluster-signing-duration "${NODELET_CP_SIGNING_DURATION:-8760h}" \
		--use-service-account-credentials=true \
		--controllers "${NODELET_CP_CONTROLLERS:-*}" \
		--leader-elect=false \
		"${gates[@]}" \
		--bind-address 127.0.0.1
	wait_until 60 kube-controller-manager curl -fsSk https://127.0.0.1:10257/healthz
}

start_scheduler() {
	local -a gates
	read -ra gates < <(gate_flags) || true
	daemon_start kube-scheduler "$CP_BIN/kube-scheduler" \
		--kubeconfig "$CP_DIR/scheduler.kubeconfig" \
		--authentication-kubeconfig "$CP_DIR/scheduler.kubeconfig" \
		--authorization-kubeconfig "$CP_DIR/scheduler.kubeconfig" \
		--leader-elect=false \
		"${gates[@]}" \
		--bind-address 127.0.0.1
	# /healthz on its secure port is open to anonymous callers by default.
	wait_until 60 kube-scheduler curl -fsSk https://127.0.0.1:10259/healthz
}

# random_alnum N prints N random characters of [a-z0-9] (reading until it has N: about one
# byte in seven of /dev/urandom is kept).
random_alnum() {
	local out=""
	while ((${#out} < $1)); do
		out+=$(head -c 256 /dev/urandom | tr -dc a-z0-9)
	done
	echo "${out:0:$1}"
}

# ensure_bootstrap_token: a bootstrap token (kubeadm's kind: a Secret in kube-system) and the
# RBAC bindings kubeadm makes, so a node can join with it by TLS bootstrap — its CSR is
# approved by the csrapproving controller — and later renew its own client certificate.
ensure_bootstrap_token() {
	# A token is [a-z0-9]{6}.[a-z0-9]{16}; one in another shape (a short draw from an earlier
	# version of this script) is refused by the API server as Unauthorized, so it is replaced.
	if ! grep -qxE '[a-z0-9]{6}\.[a-z0-9]{16}' "$BOOTSTRAP_TOKEN_FILE" 2>/dev/null; then
		(umask 077 && echo "$(random_alnum 6).$(random_alnum 16)" >"$BOOTSTRAP_TOKEN_FILE")
	fi
	local id secret
	IFS=. read -r id secret <"$BOOTSTRAP_TOKEN_FILE"
	admin_kubectl apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Secret
metadata: {name: bootstrap-token-$id, namespace: kube-system}
type: bootstrap.kubernetes.io/token
stringData:
  token-id: "$id"
  token-secret: "$secret"
  usage-bootstrap-authentication: "true"
  description: nodelet test control plane
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: "kubeadm:kubelet-bootstrap"}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "system:node-bootstrapper"}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: Group, name: "system:bootstrappers"}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: "kubeadm:node-autoapprove-bootstrap"}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "system:certificates.k8s.io:certificatesigningrequests:nodeclient"}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: Group, name: "system:bootstrappers"}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: "kubeadm:node-autoapprove-certificate-rotation"}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient"}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: Group, name: "system:nodes"}]
EOF
}

cmd_bootstrap_kubeconfig() {
	local path=${1:?usage: $0 bootstrap-kubeconfig PATH}
	ensure_bootstrap_token
	local kc=(kubectl --kubeconfig "$path")
	rm -f "$path"
	"${kc[@]}" config set-cluster nodelet-cp --server "$API_URL" --certificate-authority "$CP_PKI/ca.crt" --embed-certs >/dev/null
	"${kc[@]}" config set-credentials bootstrap --token "$(cat "$BOOTSTRAP_TOKEN_FILE")" >/dev/null
	"${kc[@]}" config set-context bootstrap --cluster nodelet-cp --user bootstrap >/dev/null
	"${kc[@]}" config use-context bootstrap >/dev/null
	echo "$path"
}

# grant_kubelet_access lets the API server's kubelet client (logs, exec, /configz via the
# node proxy) call every node's kubelet API.
grant_kubelet_access() {
	admin_kubectl create clusterrolebinding nodelet-cp:apiserver-kubelet-client \
		--clusterrole system:kubelet-api-admin --user kube-apiserver-kubelet-client \
		--dry-run=client -o yaml | admin_kubectl apply -f - >/dev/null
}

cmd_up() {
	build_all
	ensure_etcd_installed
	echo "==> certificates and kubeconfigs in $CP_DIR"
	"$CP_BIN/certs" init --dir "$CP_DIR" --server "$API_URL" --host-ip "$(host_ip)"
	echo "==> starting control plane"
	start_etcd
	start_apiserver
	start_controllers
	start_scheduler
	grant_kubelet_access
	ensure_bootstrap_token
	echo "==> control plane ready at $API_URL (server $(admin_kubectl version -o json |
		sed -n 's/.*"gitVersion": "\(v[^"]*\)".*/\1/p' | tail -n 1))"
	echo "    export KUBECONFIG=$ADMIN_KUBECONFIG"
}

cmd_down() {
	local i
	for ((i = ${#COMPONENTS[@]} - 1; i >= 0; i--)); do
		daemon_stop "${COMPONENTS[i]}"
	done
}

cmd_status() {
	local name pid state=0
	for name in "${COMPONENTS[@]}"; do
		if pid=$(daemon_pid "$name"); then
			printf '%-24s running (pid %s)\n' "$name" "$pid"
		else
			printf '%-24s stopped\n' "$name"
			state=1
		fi
	done
	if daemon_pid kube-apiserver >/dev/null; then
		printf '%-24s %s\n' "/readyz" "$(admin_kubectl get --raw /readyz 2>&1 | tail -n 1)"
	fi
	return "$state"
}

cmd_node_kubeconfig() {
	local name=${1:?usage: $0 node-kubeconfig NAME}
	build_certs
	[[ -f $CP_PKI/ca.crt ]] || "$CP_BIN/certs" init --dir "$CP_DIR" --server "$API_URL" --host-ip "$(host_ip)"
	"$CP_BIN/certs" node --dir "$CP_DIR" --server "$API_URL" --name "$name"
	echo "$CP_DIR/node-$name.kubeconfig"
}

cmd_clean() {
	cmd_down
	rm -rf "$CP_DIR/etcd" "$CP_RUN"
	echo "    removed etcd data ($CP_DIR/etcd); certificates kept in $CP_PKI"
}

case ${1:-} in
build) build_all ;;
build-conformance) build_conformance ;;
build-dra-driver) build_dra_driver ;;
up) cmd_up ;;
down) cmd_down ;;
status) cmd_status ;;
node-kubeconfig) cmd_node_kubeconfig "${2:-}" ;;
bootstrap-kubeconfig) cmd_bootstrap_kubeconfig "${2:-}" ;;
restart-controller-manager) daemon_stop kube-controller-manager && start_controllers ;;
env) echo "export KUBECONFIG=$ADMIN_KUBECONFIG" ;;
admin-token) ensure_token_file && cut -d, -f1 "$TOKEN_FILE" ;;
clean) cmd_clean ;;
# For outage tests: stop and start only the API server.
stop-apiserver) daemon_stop kube-apiserver ;;
start-apiserver) start_apiserver ;;
*)
	sed -n '2,20s/^# \{0,1\}//p' "$0" >&2
	exit 2
	;;
esac
