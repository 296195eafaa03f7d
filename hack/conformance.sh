#!/usr/bin/env bash
# conformance.sh runs the upstream node conformance suite (test/e2e_node of k8s.io/kubernetes
# v1.33.4, specs labelled NodeConformance && !Serial && !Flaky && !Feature && !Disruptive) on
# the local control plane, first against nodelet, then against the upstream kubelet, and
# writes CONFORMANCE.md from the two reports. Before each run it records in $OUT/SUBJECT/run.json
# what the column comes from (checkout HEAD, binary hash, image digests from `ctr images ls`,
# TIMEOUT, PROCS, FOCUS, invocation id); SUBJECTS=nodelet re-uses the last kubelet column and
# the report says so.
#
#   hack/conformance.sh          full run, both kubelets, writes CONFORMANCE.md (up to TIMEOUT each:
#                                a spec whose pod nodelet cannot start waits 5 min before failing);
#                                then the serial selection (hack/conformance/serial.txt: eviction, GC,
#                                OOM, allocatable specs) one spec at a time, each kubelet started
#                                through hack/conformance/shim/systemctl so the specs can restart it
#                                on the configuration they write; then the pod API, resources
#                                and DRA selections
#   hack/conformance.sh serial   the serial selection only (both kubelets), part by part
#   hack/conformance.sh podapi   the pod API selection only (hack/conformance/podapi.txt: native
#                                sidecars, in-place resize, user namespaces; both kubelets)
#   hack/conformance.sh resources the resources selection only (hack/conformance/resources.txt: CPU,
#                                memory and topology managers, pod resources, device plugins; both
#                                kubelets, one spec at a time), part by part
#   hack/conformance.sh dra      the DRA selection only (hack/conformance/dra.txt: the suite's Dynamic
#                                Resource Allocation specs with its in-process test driver; both
#                                kubelets with the DynamicResourceAllocation gate on, one spec at a time)
#   hack/conformance.sh page     rewrite CONFORMANCE.md from the latest columns, running nothing
#                                (hack/guest.sh does after `make guest-conformance`)
#   hack/conformance.sh smoke    the SMOKE specs against nodelet only (a few minutes); fails on any failure
#
# Env: SUBJECTS (default "nodelet kubelet"), SELECTIONS (default "parallel serial podapi resources dra"),
#      PART (the serial or resources selection's parts to run, e.g. "2" or "1 3"; default all: each
#      part of serial.txt or resources.txt runs, and is kept, on its own, both kubelets in turn),
#      PROCS (parallel ginkgo processes, default 5),
#      FOCUS (ginkgo focus regex; for the serial, resources and DRA selections it replaces their list; a FOCUS run
#      writes $OUT/CONFORMANCE.md and keeps no column in hack/conformance/results), TIMEOUT (per run, default 2h), OUT (default _output/conformance),
#      CONTAINERD_INSTANCE (the project containerd instance both kubelets use: empty for containerd 2,
#      the default, or containerd16 for the compatibility lane's containerd 1.6, hack/containerd16.sh,
#      whose whole runs are kept in hack/conformance/results-containerd16 and shown where they differ),
#      NO_WAIT_QUIET=1 (do not wait for other e2e/bench runs: `make test` runs its steps in order),
#      NODELET_CP_LOCK_HELD=1 (the caller holds /run/nodelet-cp.lock already).
# Nothing comes from the network: hack/images.sh conformance push imports every image the
# selected specs need and pushes it to the project registry (the distribution registry on
# 127.0.0.1:5000, containerd's mirror of registry.k8s.io), which serves them to specs that pull;
# a distribution registry with TLS and htpasswd on 127.0.0.1:5443 is the suite's authenticated one.
# The control plane is shared with `make test`: the run waits until no e2e/bench run is going
# and holds /run/nodelet-cp.lock throughout. It wipes etcd first (the suite wants exactly one
# Node) and leaves the control plane up.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO_ROOT=$PWD

MODE=${1:-full}
OUT=${OUT:-$REPO_ROOT/_output/conformance}
PROCS=${PROCS:-5}
SUBJECTS=${SUBJECTS:-nodelet kubelet}
CP_BIN=$REPO_ROOT/_output/cp/bin
CP_DIR=/var/lib/nodelet-cp
CONTAINERD_INSTANCE=${CONTAINERD_INSTANCE:-}
CONTAINERD_RUN_DIR=/run/nodelet${CONTAINERD_INSTANCE:+-$CONTAINERD_INSTANCE}
SOCKET=$CONTAINERD_RUN_DIR/containerd/containerd.sock
ENDPOINT=unix://$SOCKET
NODE=$(hostname | tr '[:upper:]' '[:lower:]')
LOCK=/run/nodelet-cp.lock
TIMEOUT=${TIMEOUT:-2h}
# Both kubelets use the standard root: the device plugin specs dial /var/lib/kubelet/device-plugins.
# Both serve the read-only port 10255 (loopback use only here): the suite reads /stats/summary,
# /metrics and /metrics/cadvisor there, as the node e2e harness's own kubelet set-up allows.
ROOT_DIR=/var/lib/kubelet
BUSY_PATTERN='go test -tags e2e|e2e.test|hack/bench|make test'
KUBELETS_PATTERN='bin/nodelet |cp/bin/kubelet '
LABELS='NodeConformance && !Serial && !Flaky && !Feature && !Disruptive'
# As the node suite's own harness sets up a kubelet on a host without systemd: the kubelet in
# /kubelet, the host's processes in /system (the Summary API spec expects a "misc" container).
SYSTEM_CGROUPS=$'cgroupRoot: /\nkubeletCgroups: /kubelet\nsystemCgroups: /system'

# One id per invocation, kept across the re-exec under the lock: columns of one id come from one run.
export CONFORMANCE_INVOCATION=${CONFORMANCE_INVOCATION:-$(date -u +%Y%m%dT%H%M%SZ)-$$}
REPORTER=$OUT/bin/conformance-report

SKIPS_FILE=$REPO_ROOT/hack/conformance/skips.txt
SMOKE_FILE=$REPO_ROOT/hack/conformance/smoke.txt
# The second selection: the upstream node suite's own specs for the managers that keep a node
# alive (eviction, GC, OOM, allocatable, summary), run one at a time after the parallel one.
SERIAL_FILE=$REPO_ROOT/hack/conformance/serial.txt
SERIAL_LABELS='!Flaky'
# The third: the upstream node suite's specs for native sidecars, in-place resize and user
# namespaces (Feature/FeatureGate/Serial labels keep them out of the parallel one): in parallel,
# then its Serial specs one at a time, one TIMEOUT for both.
PODAPI_FILE=$REPO_ROOT/hack/conformance/podapi.txt
PODAPI_LABELS='!Flaky'
# The fourth: the upstream node suite's specs for the resource managers (CPU, memory, topology,
# pod resources, device plugins), all Serial, one at a time, part by part like the serial one. No
# label filter: upstream marks whole contexts of them Flaky, and those are the ones that run here.
RESOURCES_FILE=$REPO_ROOT/hack/conformance/resources.txt
RESOURCES_LABELS=
# The fifth: the upstream node suite's Dynamic Resource Allocation specs (all Serial: one at a time,
# each free to restart the kubelet), both kubelets with the DynamicResourceAllocation gate on.
# The specs run upstream's DRA test driver inside e2e_node.test: it registers through
# $ROOT_DIR/plugins_registry and writes CDI specs to /var/run/cdi, linked for the run to the
# project containerd's cdi_spec_dirs (hack/containerd.sh).
DRA_FILE=$REPO_ROOT/hack/conformance/dra.txt
DRA_LABELS='!Flaky'
CDI_LINK=/var/run/cdi
CDI_DIR=/etc/nodelet/containerd/cdi
# The sixth, run in the guest lane's QEMU guest by `make guest-conformance` (hack/guest.sh), not
# here: the upstream specs that need cgroup v2 or systemd. Its kept columns are
# hack/conformance/results/guest/SUBJECT; the page shows them.
GUEST_FILE=$REPO_ROOT/hack/conformance/guest.txt
SELECTIONS=${SELECTIONS:-parallel serial podapi resources dra}
SELECTION=parallel
PART_NO=
RUN_DIR=$OUT
# The suite restarts "the kubelet service" with sudo systemctl: these stand-ins do it here.
SHIM_PATH=$REPO_ROOT/hack/conformance/shim:$PATH

# regex_args FLAG FILE prints "FLAG REGEX" per spec pattern of FILE (text before " ## ").
regex_args() {
	sed -e '/^[[:space:]]*#/d' -e '/^[[:space:]]*$/d' -e 's/ ## .*//' "$2" | while IFS= read -r re; do
		printf '%s\n%s\n' "$1" "$re"
	done
}

say() { printf '\n\033[1m==> %s\033[0m\n' "$*"; }
kubectl_admin() { kubectl --kubeconfig "$CP_DIR/admin.kubeconfig" "$@"; }
# The kubelets under test, and the services beside them.
# shellcheck source=hack/conformance/subjects.sh
. "$REPO_ROOT/hack/conformance/subjects.sh"
# shellcheck source=hack/conformance/services.sh
. "$REPO_ROOT/hack/conformance/services.sh"

prepare() {
	say "building nodelet, the control plane, e2e_node.test, agnhost, ginkgo"
	go build -buildvcs=true -o _output/bin/nodelet ./cmd/nodelet
	mkdir -p "$OUT/bin"
	go build -o "$REPORTER" ./hack/conformance
	hack/control-plane.sh build
	hack/control-plane.sh build-conformance
	go build -o "$OUT/bin/fakelogind" ./test/fakelogind
	make --no-print-directory registries # the project and private registries, regtool
	hack/containerd.sh restart-if-stale # the registry mirror is part of its config
	hack/images.sh conformance push
	if [[ $CONTAINERD_INSTANCE == containerd16 ]]; then
		hack/containerd16.sh up # imports what hack/images.sh built
	elif [[ -n $CONTAINERD_INSTANCE ]]; then
		echo "conformance: CONTAINERD_INSTANCE=$CONTAINERD_INSTANCE: want empty (containerd 2) or containerd16" >&2
		exit 2
	fi
}

# run_suite SUBJECT SMOKE: runs e2e_node.test through ginkgo against the running node, with
# the skips of skips.txt and (SMOKE=1) only the specs of smoke.txt.
run_suite() {
	local subject=$1 smoke=$2 dir=$RUN_DIR/$1 procs=$PROCS labels=$LABELS
	local -a filter_args=()
	mapfile -t filter_args < <(regex_args --skip "$SKIPS_FILE")
	[[ $smoke != 1 ]] || mapfile -t -O "${#filter_args[@]}" filter_args < <(regex_args --focus "$SMOKE_FILE")
	say "running the $SELECTION selection against $subject (log $dir/e2e.log)"
	# The suite's own working files (kubelet drop-in dir, kubelet-config) go to $dir/work: ginkgo
	# runs a compiled suite in the binary's directory, so it runs a link to it placed there.
	mkdir -p "$dir/work"
	ln -sf "$CP_BIN/e2e_node.test" "$dir/work/e2e_node.test"
	: >"$dir/e2e.log"
	if [[ $SELECTION == podapi ]]; then
		run_podapi "$dir" "${filter_args[@]}"
	elif [[ $SELECTION == dra ]]; then
		# One spec at a time: each restarts the kubelet. FOCUS replaces dra.txt's list.
		local -a focus=()
		if [[ -n ${FOCUS:-} ]]; then focus=(--focus "$FOCUS"); else mapfile -t focus < <(regex_args --focus "$DRA_FILE"); fi
		ginkgo_run "$dir" report.json "$(suite_procs)" "$DRA_LABELS" "${filter_args[@]}" "${focus[@]}"
	elif ! parted; then
		[[ -z ${FOCUS:-} ]] || filter_args+=(--focus "$FOCUS")
		ginkgo_run "$dir" report.json "$procs" "$labels" "${filter_args[@]}"
	elif [[ -n ${FOCUS:-} ]]; then
		# ginkgo ORs its --focus flags, so FOCUS narrows the selection by replacing its list.
		ginkgo_run "$dir" report.json 1 "$(selection_labels)" "${filter_args[@]}" --focus "$FOCUS"
	else
		# One spec at a time, each free to restart the kubelet through the systemctl shim; the
		# lines marked "## first" run before the others, in an invocation of their own.
		local -a first=() rest=() reports=()
		mapfile -t first < <(part_lines "$PART_NO" | grep -E ' ## first' | regex_args --focus /dev/stdin)
		mapfile -t rest < <(part_lines "$PART_NO" | grep -vE ' ## first' | regex_args --focus /dev/stdin)
		if ((${#first[@]})); then
			ginkgo_run "$dir" report-first.json 1 "$(selection_labels)" "${filter_args[@]}" "${first[@]}"
			reports+=("$dir/report-first.json")
		fi
		ginkgo_run "$dir" report-rest.json 1 "$(selection_labels)" "${filter_args[@]}" "${rest[@]}"
		reports+=("$dir/report-rest.json")
		jq -s add "${reports[@]}" >"$dir/report.json" || true
	fi
	grep -E '^(Ran |FAIL!|SUCCESS!|PASS|FAIL)' "$dir/e2e.log" | tail -n 3 || true
}

# run_podapi DIR ARGS...: the pod API selection within one TIMEOUT: its parallel specs in PROCS
# processes within three quarters of it, then its Serial specs one at a time in what is left (at
# least a minute, so their report still lists them, as not run). FOCUS replaces podapi.txt's list.
run_podapi() {
	local dir=$1 start=$SECONDS budget left
	shift
	local -a focus=()
	if [[ -n ${FOCUS:-} ]]; then
		focus=(--focus "$FOCUS")
	else
		mapfile -t focus < <(regex_args --focus "$PODAPI_FILE")
	fi
	budget=$(duration_seconds "$TIMEOUT")
	local TIMEOUT=$((budget * 3 / 4))s
	ginkgo_run "$dir" report-parallel.json "$PROCS" "!Serial && $PODAPI_LABELS" "$@" "${focus[@]}"
	left=$((budget - (SECONDS - start)))
	((left >= 60)) || left=60
	TIMEOUT=${left}s
	ginkgo_run "$dir" report-serial.json 1 "Serial && $PODAPI_LABELS" "$@" "${focus[@]}"
	jq -s add "$dir/report-parallel.json" "$dir/report-serial.json" >"$dir/report.json" || true
}

# duration_seconds D prints a Go-style duration of hours, minutes and seconds (2h, 25m, 1h30m,
# 90s) in seconds.
duration_seconds() {
	local rest=$1 total=0
	while [[ $rest =~ ^([0-9]+)([hms])(.*)$ ]]; do
		case ${BASH_REMATCH[2]} in
		h) ((total += BASH_REMATCH[1] * 3600)) ;;
		m) ((total += BASH_REMATCH[1] * 60)) ;;
		s) ((total += BASH_REMATCH[1])) ;;
		esac
		rest=${BASH_REMATCH[3]}
	done
	if [[ -n $rest || $total == 0 ]]; then
		echo "conformance: TIMEOUT=$1: give it in hours, minutes or seconds (2h, 25m, 1h30m)" >&2
		return 1
	fi
	echo "$total"
}

# ginkgo_run DIR REPORT PROCS LABELS ARGS...: one e2e_node.test invocation, its output appended
# to DIR/e2e.log and its JSON report written to DIR/REPORT.
ginkgo_run() {
	local dir=$1 report=$2 procs=$3 labels=$4 token
	shift 4
	token=$(hack/control-plane.sh admin-token)
	(cd "$dir/work" && PATH=$SHIM_PATH "$CP_BIN/ginkgo" --procs "$procs" --timeout "$TIMEOUT" --label-filter "$labels" \
		"$@" --no-color --output-dir "$dir" \
		--junit-report "${report%.json}.xml" --json-report "$report" \
		"$dir/work/e2e_node.test" -- \
		--start-services=false --stop-services=false --prepull-images=false \
		--host "https://127.0.0.1:6443" --bearer-token "$token" --node-name "$NODE" \
		--container-runtime-endpoint "$ENDPOINT" --container-runtime-process-name containerd \
		--container-runtime-pid-file "$CONTAINERD_RUN_DIR/containerd.pid" \
		--dns-domain cluster.local --report-dir "$dir" --dump-logs-on-failure=false \
		>>"$dir/e2e.log" 2>&1) || true
}

# suite_procs is how many ginkgo processes the selection runs: the serial, resources and DRA
# selections one spec at a time (each may restart the kubelet), the others PROCS.
suite_procs() {
	if parted || [[ $SELECTION == dra ]]; then echo 1; else echo "$PROCS"; fi
}

# record_start SUBJECT writes $OUT/SUBJECT/run.json: what this column comes from.
record_start() {
	local subject=$1 binary=_output/bin/nodelet version= procs
	procs=$(suite_procs)
	[[ $SELECTION != podapi ]] || procs="$PROCS (then its Serial specs, 1)"
	if [[ $subject == kubelet ]]; then
		binary=${CP_BIN#"$REPO_ROOT"/}/kubelet
		version=$("$binary" --version 2>/dev/null || true)
	fi
	"$REPORTER" -record "$RUN_DIR/$subject/run.json" -subject "$subject" -invocation "$CONFORMANCE_INVOCATION" \
		-binary "$binary" -version "$version" -timeout "$TIMEOUT" -procs "$procs" -focus "${FOCUS:-}" \
		-socket "$SOCKET" || echo "conformance: could not record $subject's provenance" >&2
}

# drop_loopback_aliases removes the image names that e2e registry tests leave in the runtime
# (127.0.0.1:PORT/busybox:1.36, the busybox test image under another name): containerd reports a
# container's image as the first name of its image, which they are, so specs comparing a
# container's status image with its pod's image would fail on either kubelet.
drop_loopback_aliases() {
	local -a refs
	mapfile -t refs < <(ctr --address "$SOCKET" -n k8s.io images ls -q | grep '^127\.0\.0\.1:' || true)
	((${#refs[@]})) || return 0
	say "removing image names left by registry tests: ${refs[*]}"
	ctr --address "$SOCKET" -n k8s.io images rm "${refs[@]}" >/dev/null || echo "conformance: could not remove ${refs[*]}" >&2
}

run_subject() {
	local subject=$1 smoke=${2:-0}
	rm -rf "${RUN_DIR:?}/$subject" && mkdir -p "$RUN_DIR/$subject"
	drop_loopback_aliases
	# The last subject's pods are gone (cleanup_subject): its managers' state goes with them.
	remove_manager_state
	say "starting $subject as node $NODE"
	"start_$subject" || return 1
	if ! wait_node_ready; then
		echo "conformance: $subject did not become Ready; see $RUN_DIR/$subject/*.log" >&2
		cleanup_subject "$subject"
		return 1
	fi
	record_start "$subject"
	run_suite "$subject" "$smoke"
	"$REPORTER" -record-end "$RUN_DIR/$subject/run.json" -socket "$SOCKET" || true
	# A smoke or FOCUS run is not a whole column: the kept results stay as they are.
	if [[ $smoke != 1 && -z ${FOCUS:-} ]]; then
		"$REPORTER" -keep "$RUN_DIR/$subject" -keep-to "$(kept_dir "$subject")" ||
			echo "conformance: could not keep the $subject column in $(kept_dir "$subject")" >&2
	fi
	say "stopping $subject and removing its pods"
	cleanup_subject "$subject"
}

# page_path is where the report goes: CONFORMANCE.md, or under $OUT for a FOCUS run, which
# covers part of a selection only.
page_path() {
	if [[ -n ${FOCUS:-} ]]; then echo "$OUT/CONFORMANCE.md"; else echo CONFORMANCE.md; fi
}

# kept_dir SUBJECT is where the repository keeps the current selection's (or serial part's)
# column of SUBJECT.
kept_dir() {
	if parted; then
		echo "$(kept_root)/$SELECTION/part-$PART_NO/$1"
	else
		echo "$(kept_root)/${SELECTION:-parallel}/$1"
	fi
}

# kept_root is where the runtime under test keeps its columns: the compatibility lane's
# containerd 1.6 in hack/conformance/results-containerd16, which the page shows beside the
# containerd 2 columns where the two differ.
kept_root() {
	echo "hack/conformance/results${CONTAINERD_INSTANCE:+-$CONTAINERD_INSTANCE}"
}

# part_lines N prints the lines of the current selection's part N (those under "#- part N: TITLE").
part_lines() {
	awk -v n="$1" '/^#- part [0-9]+:/ { part = $3 + 0; next } /^[[:space:]]*(#|$)/ { next } part == n' "$(selection_file)"
}

# selection_parts FILE lists the parts of FILE (serial.txt, resources.txt) to run: PART, else
# every part of it.
selection_parts() {
	local all
	all=$(sed -n 's/^#- part \([0-9]\{1,\}\):.*/\1/p' "$1" | tr '\n' ' ')
	if [[ -z ${PART:-} ]]; then
		echo "$all"
		return
	fi
	local p
	for p in $PART; do
		[[ " $all " == *" $p "* ]] || { echo "conformance: PART=$PART: ${1#"$REPO_ROOT"/} has parts $all" >&2; return 1; }
	done
	echo "$PART"
}

# selected SELECTION: this invocation runs that selection.
selected() { [[ " $SELECTIONS " == *" $1 "* ]]; }

# column SELECTION SUBJECT is the directory of the column's latest results: the run directory for a
# selection this invocation ran, else the kept copy in hack/conformance/results.
column() {
	local dir=$OUT/$2
	[[ $1 == parallel ]] || dir=$OUT/$1/$2
	# $OUT holds whatever ran last, a FOCUS run's leftovers too: only a selection this invocation
	# ran is read from there (the page mode runs none). A whole run on the compatibility lane is
	# kept in its own results and shown beside the page's columns, not as them.
	if [[ $MODE != page && -f $dir/report.json ]] && selected "$1" && [[ -z $CONTAINERD_INSTANCE || -n ${FOCUS:-} ]]; then
		echo "$dir"
	else
		[[ ! -f hack/conformance/results/$1/$2/report.json ]] || say "the $1 $2 column comes from hack/conformance/results/$1/$2 (see its provenance)" >&2
		echo "hack/conformance/results/$1/$2"
	fi
}

locked_main() {
	trap '[[ -z $SUBJECT_PID ]] || cleanup_subject interrupted; stop_registries; stop_fakelogind; unlink_cdi_dir' EXIT
	wait_no_kubelets
	say "fresh control plane (etcd wiped: the suite expects exactly one Node)"
	hack/control-plane.sh clean
	# As the node suite's own harness: no node lifecycle controller, whose pressure taints
	# would make the eviction specs' node unschedulable ("no ready, schedulable nodes").
	# UserNamespacesPodSecurityStandards (alpha, an API server gate): the restricted level admits a
	# hostUsers=false pod, as the pod API selection's user-namespace spec expects.
	NODELET_CP_CONTROLLERS='*,-node-lifecycle-controller' NODELET_CP_FEATURE_GATES=UserNamespacesPodSecurityStandards=true \
		hack/control-plane.sh up
	hack/control-plane.sh node-kubeconfig "$NODE" >/dev/null
	check_registry || echo "conformance: going on without it; specs that pull an image will fail" >&2
	start_private_registry || echo "conformance: going on without it; the private-registry spec meets an unreachable host instead" >&2
	if [[ $MODE == smoke ]]; then
		# Its own directory: a later full run must not take the smoke report for a column.
		RUN_DIR=$OUT/smoke${CONTAINERD_INSTANCE:+-$CONTAINERD_INSTANCE}
		run_subject nodelet 1
		"$REPORTER" -smoke -nodelet "$RUN_DIR/nodelet/report.json"
		return
	fi
	local subject parts
	for SELECTION in $SELECTIONS; do
		if ! parted; then
			RUN_DIR=$OUT
			[[ $SELECTION == parallel ]] || RUN_DIR=$OUT/$SELECTION
			if [[ $SELECTION == dra ]] && ! link_cdi_dir; then
				continue
			fi
			for subject in $SUBJECTS; do
				run_subject "$subject" || echo "conformance: $subject run of the $SELECTION selection failed" >&2
			done
			unlink_cdi_dir
			continue
		fi
		# A FOCUS run replaces the parts with one "part 0" of its own (not kept).
		parts=0
		[[ -n ${FOCUS:-} ]] || parts=$(selection_parts "$(selection_file)")
		# The device plugin specs' sample plugin returns CDI devices, which containerd 2 resolves.
		[[ $SELECTION != resources || -n $CONTAINERD_INSTANCE ]] || link_cdi_dir
		for PART_NO in $parts; do
			RUN_DIR=$OUT/$SELECTION/part-$PART_NO
			for subject in $SUBJECTS; do
				say "$SELECTION selection, part $PART_NO: $subject"
				[[ $SELECTION != serial ]] || start_fakelogind
				run_subject "$subject" || echo "conformance: $subject run of $SELECTION part $PART_NO failed" >&2
				stop_fakelogind
			done
		done
		unlink_cdi_dir
	done
	write_page
}

# write_page writes CONFORMANCE.md (or a FOCUS run's page) from the latest columns.
write_page() {
	# A column this invocation did not run comes from the last one kept in
	# hack/conformance/results (its provenance says which commit and run).
	# The serial and resources parts come from the kept results (every whole part run is kept),
	# a FOCUS run's from its own directory.
	local serial_dir=hack/conformance/results/serial serial_file=$SERIAL_FILE
	local resources_dir=hack/conformance/results/resources resources_file=$RESOURCES_FILE
	if [[ -n ${FOCUS:-} ]] && selected serial; then
		serial_dir=$OUT/serial serial_file=$OUT/serial-focus.txt
		printf '#- part 0: FOCUS %s\n%s\n' "$FOCUS" "$FOCUS" >"$serial_file"
	fi
	# A FOCUS run of the DRA selection lists its FOCUS as the selection's focus.
	local dra_file=$DRA_FILE
	if [[ -n ${FOCUS:-} ]] && selected dra; then
		dra_file=$OUT/dra-focus.txt
		printf '%s ## FOCUS\n' "$FOCUS" >"$dra_file"
	fi
	if [[ -n ${FOCUS:-} ]] && selected resources; then
		resources_dir=$OUT/resources resources_file=$OUT/resources-focus.txt
		printf '#- part 0: FOCUS %s\n%s\n' "$FOCUS" "$FOCUS" >"$resources_file"
	fi
	"$REPORTER" -nodelet "$(column parallel nodelet)/report.json" -kubelet "$(column parallel kubelet)/report.json" \
		-serial-dir "$serial_dir" -serial "$serial_file" -skips "$SKIPS_FILE" -causes hack/conformance/causes.txt \
		-nodelet-log "$(column parallel nodelet)/nodelet.log" \
		-podapi "$PODAPI_FILE" -podapi-nodelet "$(column podapi nodelet)" -podapi-kubelet "$(column podapi kubelet)" \
		-resources-dir "$resources_dir" -resources "$resources_file" \
		-dra "$dra_file" -dra-nodelet "$(column dra nodelet)" -dra-kubelet "$(column dra kubelet)" \
		-guest "$GUEST_FILE" -guest-nodelet hack/conformance/results/guest/nodelet \
		-guest-kubelet hack/conformance/results/guest/kubelet \
		-compat-dir hack/conformance/results-containerd16 \
		-out "$(page_path)"
}

case $MODE in
serial | podapi | resources | dra)
	# That selection only; the other columns of CONFORMANCE.md come from the last runs.
	export SELECTIONS=$MODE
	MODE=full
	;;
esac
case $MODE in
page)
	# The page alone, from the kept columns: hack/guest.sh writes it after a guest selection run.
	mkdir -p "$OUT/bin"
	go build -o "$REPORTER" ./hack/conformance
	write_page
	;;
__locked)
	MODE=$2
	locked_main
	;;
full | smoke)
	# A wrong PART is said now, not after the build and the parallel selection.
	! selected serial || [[ -n ${FOCUS:-} ]] || selection_parts "$SERIAL_FILE" >/dev/null
	! selected resources || [[ -n ${FOCUS:-} ]] || selection_parts "$RESOURCES_FILE" >/dev/null
	! selected podapi || duration_seconds "$TIMEOUT" >/dev/null # the pod API selection splits it
	mkdir -p "$OUT"
	prepare
	wait_quiet
	# A caller that already holds the lock (flock ... make test) says so; taking it again would wait forever.
	[[ ${NODELET_CP_LOCK_HELD:-} != 1 ]] || exec "$0" __locked "$MODE"
	say "taking $LOCK"
	# -o: the daemons started under the lock (the control plane) must not inherit it.
	exec flock -o "$LOCK" "$0" __locked "$MODE"
	;;
*)
	sed -n '2,39s/^# \{0,1\}//p' "$0" >&2
	exit 2
	;;
esac
