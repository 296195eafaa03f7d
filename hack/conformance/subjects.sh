# subjects.sh, sourced by hack/conformance.sh: the kubelets under test. Waiting for the machine
# to be free of other runs and kubelets, starting nodelet or the upstream kubelet (directly or
# through the systemctl shim), and stopping it with what the suite left. It uses the variables
# conformance.sh sets (RUN_DIR, SELECTION, ROOT_DIR, CP_DIR, NODE, ENDPOINT, SOCKET).
# shellcheck shell=bash

# processes PATTERN lists the command lines of the processes matching PATTERN. A flock whose
# command line matches has not started its command: it waits on a lock this run may hold, and
# waiting for it would never end.
processes() {
	local pid
	for pid in $(pgrep -f "$1"); do
		[[ $(cat "/proc/$pid/comm" 2>/dev/null) != flock ]] || continue
		tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | cut -c1-100
	done
}

# busy_runs lists the `make test`, e2e or bench runs using the control plane.
busy_runs() { processes "$BUSY_PATTERN"; }

# wait_quiet waits until no `make test`, e2e or bench run uses the control plane.
wait_quiet() {
	local said= runs
	[[ ${NO_WAIT_QUIET:-} != 1 ]] || return 0
	while runs=$(busy_runs) && [[ -n $runs ]]; do
		[[ -n $said ]] || say "waiting for other runs on the control plane to finish: $(head -n 3 <<<"$runs" | tr '\n' ';')"
		said=1
		sleep 30
	done
}

# running_kubelets lists the nodelets and kubelets running.
running_kubelets() { processes "$KUBELETS_PATTERN"; }

# wait_no_kubelets: the suite's node must be the only one, and the upstream kubelet removes
# every pod it does not know, so no other nodelet or kubelet may run (10 min, then give up).
wait_no_kubelets() {
	local i runs
	for ((i = 0; i < 20; i++)); do
		runs=$(running_kubelets)
		[[ -n $runs ]] || return 0
		((i)) || say "waiting for these to stop (make cluster-stop / demo-stop): $(tr '\n' ';' <<<"$runs")"
		sleep 30
	done
	echo "conformance: another nodelet or kubelet still runs; stop it first" >&2
	return 1
}

SUBJECT_PID=
start_nodelet() {
	local dir=$RUN_DIR/nodelet
	mkdir -p "$dir/manifests" "$dir/work"
	# The serial specs rewrite this file (from /configz) and restart nodelet on it.
	printf 'apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n%s\n%s' "$SYSTEM_CGROUPS" "$(selection_config)" >"$dir/work/kubelet-config"
	save_tunables
	launch "$dir" nodelet.log "$REPO_ROOT/_output/bin/nodelet" --config "$dir/work/kubelet-config" \
		--kubeconfig "$CP_DIR/node-$NODE.kubeconfig" --hostname-override "$NODE" \
		--root-dir "$ROOT_DIR" --pod-manifest-path "$dir/manifests" --container-runtime-endpoint "$ENDPOINT" \
		--client-ca-file "$CP_DIR/pki/ca.crt" --cgroup-driver cgroupfs --fail-swap-on=false --cluster-domain cluster.local \
		--read-only-port 10255 --max-pods 110 -v=2 $(lock_args)
}

# under_shim: the serial, pod API, resources and DRA selections start the kubelet through the
# systemctl shim, since their specs restart it.
under_shim() { [[ $SELECTION == serial || $SELECTION == podapi || $SELECTION == resources || $SELECTION == dra ]]; }

# selection_config prints the configuration lines both kubelets add for the current selection:
# the DRA selection turns DynamicResourceAllocation on (beta, off by default in 1.33).
selection_config() {
	[[ $SELECTION != dra ]] || printf 'featureGates:\n  DynamicResourceAllocation: true\n'
}

# link_cdi_dir makes /var/run/cdi, where the suite's DRA test driver and its sample device plugin
# write their CDI specs, a link to the project containerd's cdi_spec_dirs (containerd 2 only:
# containerd 1.6 has no CDI here, and drops the CDI devices a device plugin returns).
# An existing /var/run/cdi that is not this link is left alone (said): the pods using CDI then fail.
CDI_LINKED=
link_cdi_dir() {
	if [[ -n $CONTAINERD_INSTANCE ]]; then
		echo "conformance: the DRA selection needs containerd 2's CDI; CONTAINERD_INSTANCE=$CONTAINERD_INSTANCE has none" >&2
		return 1
	fi
	if [[ -L $CDI_LINK && $(readlink "$CDI_LINK") == "$CDI_DIR" ]]; then
		CDI_LINKED=1 # an interrupted run's
		return 0
	fi
	if [[ -e $CDI_LINK || -L $CDI_LINK ]]; then
		echo "conformance: $CDI_LINK exists; the suite's CDI specs land there, not in $CDI_DIR" >&2
		return 0
	fi
	mkdir -p "$CDI_DIR" && ln -s "$CDI_DIR" "$CDI_LINK" && CDI_LINKED=1
}

# unlink_cdi_dir removes the link and the CDI specs the suite's test drivers (test-driver.cdi.k8s.io,
# test-driver1/2.cdi.k8s.io) and sample device plugin (example.com) left behind: a spec that stops
# the driver mid-claim leaves its specs.
unlink_cdi_dir() {
	[[ -z $CDI_LINKED ]] || rm -f "$CDI_LINK" "$CDI_DIR"/test-driver*.cdi.k8s.io-*.json "$CDI_DIR"/example.com.json
	CDI_LINKED=
}

# parted: the serial and resources selections run one spec at a time, part by part.
parted() { [[ $SELECTION == serial || $SELECTION == resources ]]; }

# selection_file is the current parted selection's list of parts and focus regexes.
selection_file() {
	if [[ $SELECTION == resources ]]; then echo "$RESOURCES_FILE"; else echo "$SERIAL_FILE"; fi
}

# selection_labels is the current parted selection's ginkgo label filter.
selection_labels() {
	if [[ $SELECTION == resources ]]; then echo "$RESOURCES_LABELS"; else echo "$SERIAL_LABELS"; fi
}

MANAGER_STATE_FILES=(cpu_manager_state memory_manager_state device-plugins/kubelet_internal_checkpoint dra_manager_state)

# remove_manager_state deletes the resource managers' state files a kubelet left in the root
# directory: the specs switch policies, and a kubelet refuses to start on another policy's state
# (both kubelets start on policy none); and the DRA manager's claims, which would have the next
# kubelet unprepare the last one's claims on drivers long gone. Called before a kubelet starts,
# once the last one's pods are gone.
remove_manager_state() {
	local f
	for f in "${MANAGER_STATE_FILES[@]}"; do rm -f "$ROOT_DIR/$f"; done
}

# lock_args: in the serial selection each kubelet holds the lock file the Lock contention spec
# contends for, and exits cleanly when it does (the systemctl shim then starts it again).
lock_args() {
	[[ $SELECTION != serial ]] || echo "--lock-file=/var/run/kubelet.lock --exit-on-lock-contention"
}

# launch DIR LOG COMMAND...: starts the kubelet in the background. Under the shim it
# starts it through the systemctl shim (hack/conformance/shim), which the suite then uses to
# stop and restart it on the configuration it writes to DIR/work/kubelet-config.
launch() {
	local dir=$1 log=$2
	shift 2
	if ! under_shim; then
		"$@" >"$dir/$log" 2>&1 &
		SUBJECT_PID=$!
		return
	fi
	export CONFORMANCE_SHIM_DIR=$dir/shim
	mkdir -p "$CONFORMANCE_SHIM_DIR"
	{
		echo '#!/usr/bin/env bash'
		printf 'exec'
		printf ' %q' "$@"
		echo
	} >"$CONFORMANCE_SHIM_DIR/start"
	chmod +x "$CONFORMANCE_SHIM_DIR/start"
	ln -sf "$CONFORMANCE_SHIM_DIR/log" "$dir/$log"
	"$REPO_ROOT/hack/conformance/shim/systemctl" restart kubelet-e2e.service
	SUBJECT_PID=$(cat "$CONFORMANCE_SHIM_DIR/pid")
}

# current_pid: the kubelet's pid now (the serial specs restart it under the shim).
current_pid() {
	if under_shim && [[ -s ${CONFORMANCE_SHIM_DIR:-}/pid ]]; then
		cat "$CONFORMANCE_SHIM_DIR/pid"
	else
		echo "$SUBJECT_PID"
	fi
}

KERNEL_TUNABLES=(vm/overcommit_memory vm/panic_on_oom kernel/panic kernel/panic_on_oops kernel/keys/root_maxkeys kernel/keys/root_maxbytes)
declare -A SAVED_TUNABLES=()

# save_tunables: both kubelets rewrite these sysctls at start-up; they are put back when it stops.
save_tunables() {
	local t
	for t in "${KERNEL_TUNABLES[@]}"; do SAVED_TUNABLES[$t]=$(cat "/proc/sys/$t"); done
}

start_kubelet() {
	local dir=$RUN_DIR/kubelet t
	mkdir -p "$dir/manifests" "$dir/work"
	# The upstream kubelet removes every pod it does not know: refuse while any runs.
	if ! wait_runtime_idle 300; then
		echo "conformance: containers of another kubelet still run; not starting the upstream kubelet" >&2
		return 1
	fi
	save_tunables
	cat >"$dir/work/kubelet-config" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
containerRuntimeEndpoint: $ENDPOINT
staticPodPath: $dir/manifests
clusterDomain: cluster.local
cgroupDriver: cgroupfs
failSwapOn: false
maxPods: 110
readOnlyPort: 10255
healthzBindAddress: 127.0.0.1
resolvConf: /etc/resolv.conf
authentication:
  x509: {clientCAFile: $CP_DIR/pki/ca.crt}
  webhook: {enabled: true}
  anonymous: {enabled: false}
authorization: {mode: Webhook}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
$SYSTEM_CGROUPS
$(selection_config)
EOF
	launch "$dir" kubelet.log "$CP_BIN/kubelet" --config "$dir/work/kubelet-config" --kubeconfig "$CP_DIR/node-$NODE.kubeconfig" \
		--hostname-override "$NODE" --root-dir "$ROOT_DIR" -v=2 $(lock_args)
}

restore_tunables() {
	local t
	for t in "${!SAVED_TUNABLES[@]}"; do echo "${SAVED_TUNABLES[$t]}" >"/proc/sys/$t" 2>/dev/null || true; done
	SAVED_TUNABLES=()
}

# running_tasks counts the containers (pods' and sandboxes') that run in the k8s.io namespace.
running_tasks() {
	ctr --address "$SOCKET" -n k8s.io tasks ls 2>/dev/null | awk 'NR > 1 && $3 == "RUNNING"' | wc -l
}

# wait_runtime_idle SECONDS: true once nothing runs in the runtime's k8s.io namespace.
wait_runtime_idle() {
	local i
	for ((i = 0; i < $1; i += 2)); do
		(($(running_tasks) == 0)) && return 0
		sleep 2
	done
	return 1
}

wait_node_ready() {
	local i
	for ((i = 0; i < 120; i++)); do
		kubectl_admin get node "$NODE" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null | grep -q True && return 0
		kill -0 "$(current_pid)" 2>/dev/null || return 1
		sleep 1
	done
	return 1
}

# cleanup_subject SUBJECT deletes what the suite left, lets the kubelet remove the pods, stops
# it and deletes the Node and the cluster-wide objects the suite leaves.
cleanup_subject() {
	local i
	kubectl_admin delete namespaces -l e2e-framework --wait=false >/dev/null 2>&1 || true
	kubectl_admin delete pods --all-namespaces --all --grace-period=1 --wait=false >/dev/null 2>&1 || true
	# The kubelet deletes a pod object once its containers are gone.
	for ((i = 0; i < 90; i++)); do
		[[ -z $(kubectl_admin get pods --all-namespaces --no-headers 2>/dev/null) ]] && break
		kill -0 "$(current_pid)" 2>/dev/null || break
		sleep 2
	done
	wait_runtime_idle 60 || echo "conformance: containers still run after $1's pods were deleted" >&2
	local pid
	pid=$(current_pid)
	# Under the shim, stop through it: its restart loop must not start the kubelet again.
	! under_shim || "$REPO_ROOT/hack/conformance/shim/systemctl" stop kubelet-e2e.service || true
	kill -TERM "$pid" 2>/dev/null || true
	for ((i = 0; i < 100; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
	kill -KILL "$pid" 2>/dev/null || true
	wait "$SUBJECT_PID" 2>/dev/null || true
	SUBJECT_PID=
	restore_tunables
	kubectl_admin delete node "$NODE" --ignore-not-found >/dev/null 2>&1 || true
	# Cluster-wide objects the suite leaves: the PodOverhead spec creates RuntimeClass test-handler
	# and never deletes it, so the next kubelet's run of it would fail on "already exists".
	kubectl_admin delete runtimeclasses --all >/dev/null 2>&1 || true
}
