#!/usr/bin/env bash
# guest.sh: the guest lane. A Debian bookworm guest under QEMU (software emulation: KVM guests
# hang on these hosts) that boots cgroup v2 with systemd, the host nodelet's code has otherwise
# only met as fakes. Usage:
#   hack/guest.sh deps    install debootstrap, qemu-system-x86 and e2fsprogs (idempotent)
#   hack/guest.sh image   build the guest's base disk once, cached under _output/guest/base
#                         and rebuilt only when its inputs (this script's image part) change
#   hack/guest.sh run     build the test payload, boot the guest on a copy-on-write overlay of
#                         the base disk, run the in-guest tests as a systemd unit, power off,
#                         and leave their `go test -json` events in _output/guest/run/results.json
#                         (GUEST_RUN=REGEXP runs only the in-guest tests it matches), once
#                         per subject of GUEST_SUBJECTS: nodelet, then the upstream kubelet
#                         v1.33.4 (_output/cp/bin/kubelet), whose results (results-kubelet.json)
#                         hack/guesttable sets side by side with nodelet's in GUEST.md;
#                         with GUEST_NODE_SUITE=1 (`make guest-conformance`) the guest runs the
#                         upstream node e2e suite's cgroup v2 and systemd specs instead
#                         (hack/conformance/guest.txt, TestUpstreamNodeSuite) against each
#                         subject, keeps the two columns in hack/conformance/results/guest and
#                         rewrites CONFORMANCE.md (hack/conformance.sh page)
# The payload (nodelet, the upstream kubelet, containerd 2, runc, the shim, the CNI plugins, the
# test images, the in-guest test binary test/guest/inguest, nodelet's Debian package in two
# versions, and etcd, kube-apiserver and their
# certificates for the tests that need a control plane) goes on a second disk, /dev/vdb, which the guest
# mounts at /payload; the tests write their output there (not to the serial console, which a
# getty's vhangup cuts) and it is read back with debugfs.
set -euo pipefail

REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
GUEST_DIR=$REPO_ROOT/_output/guest
BASE_DIR=$GUEST_DIR/base
RUN_DIR=$GUEST_DIR/run
SUITE=bookworm
MIRROR=${GUEST_MIRROR:-http://deb.debian.org/debian}
# iptables: the CNI bridge plugin's masquerade rules; libseccomp2: runc links it.
PACKAGES=systemd,systemd-sysv,udev,dbus,linux-image-amd64,initramfs-tools,kmod,procps,iptables,iproute2,libseccomp2
# QEMU's time limit: past the in-guest tests' own 20m per subject (hack/guest/run.sh), within
# make guest's 65m. The in-guest limits count the guest's clock, which slows with the CPU QEMU
# gets; this one counts the host's: make test's host steps (beside which QEMU runs at nice 10)
# left a guest that needs ~11 min alone past 45 min once.
GUEST_TIMEOUT=${GUEST_TIMEOUT:-3600}
# How often a running guest's progress (its in-guest test, its console's last line) is logged, in seconds.
GUEST_PROGRESS=${GUEST_PROGRESS:-300}
# The kubelets the suite runs against, in this order: nodelet (the verdicts of make guest) and
# the upstream kubelet (its column of the side-by-side table only).
GUEST_SUBJECTS=${GUEST_SUBJECTS:-nodelet kubelet}
CP_BIN=$REPO_ROOT/_output/cp/bin
# The test images the in-guest tests use (_output/images/NAME.tar).
GUEST_IMAGES=${GUEST_IMAGES:-pause busybox}
# The node suite run (GUEST_NODE_SUITE=1): its in-guest test alone, the suite's busybox under
# its upstream name, and its ginkgo budget per subject (within run.sh's 20m per subject).
GUEST_NODE_SUITE=${GUEST_NODE_SUITE:-}
GUEST_NODE_TIMEOUT=${GUEST_NODE_TIMEOUT:-14m}
GUEST_TAGS=guestvm
PAYLOAD_SIZE=1G
if [[ $GUEST_NODE_SUITE == 1 ]]; then
	GUEST_RUN=${GUEST_RUN:-^TestUpstreamNodeSuite\$}
	GUEST_IMAGES="$GUEST_IMAGES e2ebusybox"
	GUEST_TAGS=guestvm,nodesuite
	PAYLOAD_SIZE=2G # e2e_node.test is 160M more
fi

# The host's runtime (RUNTIME2_BIN, its config) and CNI network, which the guest's follow.
# shellcheck source=hack/lib/runtime2.sh
source "$REPO_ROOT/hack/lib/runtime2.sh"
# shellcheck source=hack/lib/cni.sh
source "$REPO_ROOT/hack/lib/cni.sh"

log() { echo "==> $*"; }

need_root() {
	if [[ $(id -u) -ne 0 ]]; then
		echo "guest.sh: must run as root" >&2
		exit 1
	fi
}

deps() {
	local pkg missing=()
	for pkg in debootstrap qemu-system-x86 e2fsprogs; do
		dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || missing+=("$pkg")
	done
	((${#missing[@]})) || return 0
	log "installing ${missing[*]}"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# image_stamp hashes what the base disk is made of: the suite, the package list and the
# functions that build and configure it.
image_stamp() {
	{
		echo "$SUITE $PACKAGES"
		declare -f build_image configure_rootfs
	} | sha256sum | cut -d' ' -f1
}

image() {
	local stamp start=$SECONDS
	stamp=$(image_stamp)
	if [[ -f $BASE_DIR/disk.raw && -f $BASE_DIR/stamp && $(<"$BASE_DIR/stamp") == "$stamp" ]]; then
		log "guest image up to date ($BASE_DIR/disk.raw)"
		return 0
	fi
	build_image
	echo "$stamp" >"$BASE_DIR/stamp"
	log "guest image built in $((SECONDS - start))s"
}

build_image() {
	local rootfs=$BASE_DIR/rootfs
	rm -rf "$BASE_DIR"
	mkdir -p "$BASE_DIR"
	log "debootstrap $SUITE into $rootfs (a few minutes)"
	nice -n 10 debootstrap --variant=minbase --include="$PACKAGES" "$SUITE" "$rootfs" "$MIRROR" \
		>"$BASE_DIR/debootstrap.log" 2>&1 || {
		tail -20 "$BASE_DIR/debootstrap.log" >&2
		return 1
	}
	configure_rootfs "$rootfs"
	# The kernel and initrd boot from outside the disk (-kernel/-initrd).
	cp -L "$rootfs/vmlinuz" "$BASE_DIR/vmlinuz"
	cp -L "$rootfs/initrd.img" "$BASE_DIR/initrd.img"
	nice -n 10 mkfs.ext4 -q -F -L guestroot -d "$rootfs" "$BASE_DIR/disk.raw" 3G
	rm -rf "$rootfs"
}

# configure_rootfs makes the guest boot straight into the test unit: no getty on the serial
# console, the payload disk mounted, the unit powering the guest off when it is done. The unit
# waits for the payload disk however long it takes to appear: with 8-20% of a CPU (beside make
# test's host steps) a 30 s device timeout failed the unit's dependency.
configure_rootfs() {
	local root=$1
	echo nodelet-guest >"$root/etc/hostname"
	printf '127.0.0.1 localhost\n127.0.1.1 nodelet-guest\n' >"$root/etc/hosts"
	cat >"$root/etc/fstab" <<'EOF'
/dev/vda / ext4 rw,errors=remount-ro 0 1
/dev/vdb /payload ext4 rw,nofail,x-systemd.device-timeout=0 0 2
EOF
	mkdir -p "$root/payload"
	ln -sfn /dev/null "$root/etc/systemd/system/serial-getty@ttyS0.service"
	ln -sfn /dev/null "$root/etc/systemd/system/getty@tty1.service"
	ln -sfn /dev/null "$root/etc/systemd/system/systemd-timesyncd.service"
	ln -sfn /dev/null "$root/etc/systemd/system/apt-daily.timer"
	ln -sfn /dev/null "$root/etc/systemd/system/apt-daily-upgrade.timer"
	# The unit runs whatever the payload's run.sh says, then powers off whatever it returned.
	cat >"$root/etc/systemd/system/nodelet-guest.service" <<'EOF'
[Unit]
Description=nodelet guest tests
Requires=payload.mount
After=payload.mount network.target systemd-logind.service
OnSuccess=poweroff.target
OnFailure=poweroff.target

[Service]
Type=oneshot
ExecStart=/bin/bash /payload/run.sh
StandardOutput=append:/payload/unit.log
StandardError=append:/payload/unit.log
TimeoutStartSec=infinity

[Install]
WantedBy=multi-user.target
EOF
	mkdir -p "$root/etc/systemd/system/multi-user.target.wants"
	ln -sfn /etc/systemd/system/nodelet-guest.service \
		"$root/etc/systemd/system/multi-user.target.wants/nodelet-guest.service"
}

# payload builds what the guest runs into $RUN_DIR/payload and makes it the disk payload.raw.
payload() {
	local p=$RUN_DIR/payload img
	rm -rf "$RUN_DIR"
	mkdir -p "$p/bin" "$p/cni" "$p/images" "$p/results"
	"$REPO_ROOT/hack/containerd.sh" build # cached by its stamps
	log "building nodelet and the in-guest tests"
	(cd "$REPO_ROOT" && nice go build -buildvcs=false -o "$p/bin/nodelet" ./cmd/nodelet)
	(cd "$REPO_ROOT" && nice go test -c -tags "$GUEST_TAGS" -o "$p/guest.test" ./test/guest/inguest)
	packages "$p"
	cp -a "$RUNTIME2_BIN"/{containerd,containerd-shim-runc-v2,ctr,runc} "$p/bin/"
	cp -a /usr/lib/cni/. "$p/cni/"
	for img in $GUEST_IMAGES; do
		cp -L "$REPO_ROOT/_output/images/$img.tar" "$p/images/" || {
			echo "guest.sh: no image $img: run \`make images\` first" >&2
			return 1
		}
	done
	cp "$REPO_ROOT"/hack/guest/{run.sh,containerd.sh} "$p/"
	guest_runtime_config "$p"
	echo "$GUEST_SUBJECTS" >"$p/subjects"
	control_plane_payload "$p"
	[[ $GUEST_NODE_SUITE != 1 ]] || node_suite_payload "$p"
	if [[ -n ${GUEST_RUN:-} ]]; then
		printf -- '-test.run=%s\n' "$GUEST_RUN" >"$p/test-args"
	fi
	nice -n 10 mkfs.ext4 -q -F -L payload -d "$p" "$RUN_DIR/payload.raw" "$PAYLOAD_SIZE"
}

# guest_runtime_config renders the guest's containerd config as the host's own (one per cgroup
# driver, runc's SystemdCgroup on for systemd) with the guest's paths, its default socket
# /run/containerd/containerd.sock and oom_score_adj unrestricted (the guest is root with every
# capability), and the CNI network, into the payload for hack/guest/containerd.sh.
guest_runtime_config() {
	local p=$1 driver
	for driver in systemd cgroupfs; do
		(
			ROOT_DIR=/var/lib/containerd STATE_DIR=/run/containerd SOCKET=/run/containerd/containerd.sock
			CONFIG_DIR=/etc/containerd HOSTS_DIR=/etc/containerd/certs.d CDI_SPEC_DIR=/etc/containerd/cdi RUNTIME2_BIN=/usr/local/bin
			CNI_BIN_DIR=/opt/cni/bin CNI_CONF_DIR=/etc/cni/net.d RESTRICT_OOM_SCORE_ADJ=false
			SYSTEMD_CGROUP=false
			[[ $driver == cgroupfs ]] || SYSTEMD_CGROUP=true
			render_config_v4
		) >"$p/containerd-$driver.toml"
	done
	render_cni >"$p/10-nodelet.conflist"
}

# packages builds nodelet's Debian package twice (hack/package, gzip for speed): 0.1.0~guest.1
# of the payload's nodelet and 0.1.0~guest.2 of one whose version says v0.1.0-guest.2, the
# upgrade the package test installs over it.
packages() {
	local p=$1 next=$RUN_DIR/nodelet-next
	log "building nodelet's Debian packages"
	(cd "$REPO_ROOT" && nice go build -buildvcs=false -o "$next" \
		-ldflags "-X github.com/nodelet/nodelet/internal/lib/version.Version=v0.1.0-guest.2" ./cmd/nodelet)
	(cd "$REPO_ROOT" && nice go run ./hack/package -binary "$p/bin/nodelet" -version 0.1.0~guest.1 \
		-compress gzip -out "$p/deb" >/dev/null)
	(cd "$REPO_ROOT" && nice go run ./hack/package -binary "$next" -version 0.1.0~guest.2 \
		-compress gzip -out "$p/deb" >/dev/null)
	rm -f "$next"
}

# control_plane_payload adds what the upstream kubelet and the control plane in the guest need:
# the kubelet, etcd (Debian's etcd-server, as hack/control-plane.sh) and kube-apiserver, with
# certificates and kubeconfigs for 127.0.0.1:6443 made by the host's `certs`, fresh each run.
control_plane_payload() {
	local p=$1
	"$REPO_ROOT/hack/control-plane.sh" build # cached
	command -v etcd >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq etcd-server >/dev/null
	mkdir -p "$p/cp/bin"
	cp -L "$CP_BIN/kube-apiserver" "$(command -v etcd)" "$p/cp/bin/"
	cp -L "$CP_BIN/kubelet" "$p/bin/"
	"$CP_BIN/certs" init --dir "$p/cp" --server https://127.0.0.1:6443 --host-ip 127.0.0.1 >/dev/null
	"$CP_BIN/certs" node --dir "$p/cp" --server https://127.0.0.1:6443 --name guest-node >/dev/null
}

# node_suite_payload adds the upstream node e2e suite (e2e_node.test of k8s.io/kubernetes
# v1.33.4, built by hack/control-plane.sh build-conformance), its focus list, CONFORMANCE.md's
# generator (to record each column's provenance on the guest's runtime), the checkout's HEAD,
# an invocation id shared by both columns, and the suite's budget.
node_suite_payload() {
	local d=$1/node-e2e
	mkdir -p "$d"
	"$REPO_ROOT/hack/control-plane.sh" build-conformance # cached
	cp -L "$CP_BIN/e2e_node.test" "$d/"
	(cd "$REPO_ROOT" && CGO_ENABLED=0 nice go build -o "$d/conformance-report" ./hack/conformance)
	cp "$REPO_ROOT/hack/conformance/guest.txt" "$d/"
	git -C "$REPO_ROOT" rev-parse HEAD >"$d/checkout"
	echo "guest-$(date -u +%Y%m%dT%H%M%SZ)-$$" >"$d/invocation"
	echo "$GUEST_NODE_TIMEOUT" >"$d/timeout"
}

# keep_node_suite keeps the node suite's columns (hack/conformance -keep: the report cut down,
# the provenance, nodelet's pod errors) in hack/conformance/results/guest and rewrites
# CONFORMANCE.md from every kept column.
keep_node_suite() {
	local subject dir kept=0
	for subject in $GUEST_SUBJECTS; do
		dir=$RUN_DIR/results/node-e2e/$subject
		[[ -f $dir/report.json ]] || { echo "guest.sh: no node suite report of $subject" >&2; continue; }
		cp "$RUN_DIR/results/$subject-guest-node-e2e-kubelet.log" "$dir/nodelet.log" 2>/dev/null || true
		[[ $subject == nodelet ]] || rm -f "$dir/nodelet.log"
		(cd "$REPO_ROOT" && go run ./hack/conformance -keep "$dir" -keep-to "hack/conformance/results/guest/$subject") &&
			kept=1
	done
	((kept)) || return 0
	(cd "$REPO_ROOT" && hack/conformance.sh page)
	log "the guest selection's columns kept in hack/conformance/results/guest; CONFORMANCE.md rewritten"
}

# boot runs the guest until the test unit powers it off (or GUEST_TIMEOUT passes). The root
# disk is the cached base in snapshot mode: the run's writes go to a temporary file, so the
# base stays clean. The console is not quiet (systemd shows its failures only, not the test
# unit's minutes-long progress), so its tail says where a boot stopped, and a panic (the
# initramfs's too, which would otherwise sit in a shell until GUEST_TIMEOUT) powers the guest off.
boot() {
	log "booting the guest (serial console in $RUN_DIR/serial.log)"
	local rc=0 qemu progress
	timeout "$GUEST_TIMEOUT" nice -n 10 qemu-system-x86_64 -accel tcg,thread=multi -cpu max -m 4G -smp 2 \
		-kernel "$BASE_DIR/vmlinuz" -initrd "$BASE_DIR/initrd.img" \
		-append "console=ttyS0 root=/dev/vda rw panic=5 systemd.show_status=error systemd.unified_cgroup_hierarchy=1" \
		-drive file="$BASE_DIR/disk.raw",format=raw,if=virtio,snapshot=on \
		-drive file="$RUN_DIR/payload.raw",format=raw,if=virtio \
		-nic none -display none -serial file:"$RUN_DIR/serial.log" -no-reboot &
	qemu=$!
	show_progress &
	progress=$!
	wait "$qemu" || rc=$?
	kill "$progress" 2>/dev/null || true
	wait "$progress" 2>/dev/null || true
	if ((rc == 124)); then
		echo "guest.sh: the guest ran past GUEST_TIMEOUT=${GUEST_TIMEOUT}s; killed" >&2
	elif ((rc != 0)); then
		echo "guest.sh: qemu exited $rc" >&2
	fi
}

# show_progress logs, every GUEST_PROGRESS seconds, how long the guest has run, the in-guest
# test it is on (read from the live payload disk; debugfs only reads) and its console's last
# line, so that a slow guest and a stuck one look different in make test's log. It sleeps in
# short steps: a long sleep left behind by the kill would hold the caller's output open.
show_progress() {
	local start=$SECONDS next=$GUEST_PROGRESS running console
	while sleep 5; do
		((SECONDS - start >= next)) || continue
		next=$((next + GUEST_PROGRESS))
		running=$(debugfs -R "cat /results/test.out" "$RUN_DIR/payload.raw" 2>/dev/null | grep -a '^=== RUN' | tail -n 1)
		console=$(tail -n 1 "$RUN_DIR/serial.log" 2>/dev/null | sed 's/\x1b\[[0-9;]*[A-Za-z]//g' | tr -cd '[:print:]' | cut -c1-120)
		log "the guest has run $((SECONDS - start))s; its test: ${running:-none yet}; its console: $console"
	done
}

# results copies the guest's results back from the payload disk and turns the tests' -v
# output into `go test -json` events in $RUN_DIR/results.json.
results() {
	rm -rf "$RUN_DIR/results"
	debugfs -R "rdump /results $RUN_DIR" "$RUN_DIR/payload.raw" >/dev/null 2>&1 || true
	if [[ ! -f $RUN_DIR/results/exit ]]; then
		echo "guest.sh: the guest left no results; the end of its console, run log and tests' output:" >&2
		tail -40 "$RUN_DIR/serial.log" >&2 || true
		tail -40 "$RUN_DIR/results/run.log" >&2 2>/dev/null || true
		tail -20 "$RUN_DIR/results/test.out" >&2 2>/dev/null || true
		return 1
	fi
	go tool test2json -t <"$RUN_DIR/results/test.out" >"$RUN_DIR/results.json"
	log "guest tests exited $(<"$RUN_DIR/results/exit"); events in $RUN_DIR/results.json"
	if [[ -f $RUN_DIR/results/test-kubelet.out ]]; then
		go tool test2json -t <"$RUN_DIR/results/test-kubelet.out" >"$RUN_DIR/results-kubelet.json"
		log "the upstream kubelet's run exited $(<"$RUN_DIR/results/exit-kubelet"); events in $RUN_DIR/results-kubelet.json"
	fi
	table
	[[ $GUEST_NODE_SUITE != 1 ]] || keep_node_suite || echo "guest.sh: the guest selection's columns were not kept" >&2
}

# table writes the side-by-side table of nodelet and the upstream kubelet: GUEST.md for a
# run of the whole suite with both, $RUN_DIR/GUEST.md for a GUEST_RUN selection.
table() {
	[[ -f $RUN_DIR/results-kubelet.json ]] || return 0
	local out=$REPO_ROOT/GUEST.md
	[[ -z ${GUEST_RUN:-} ]] || out=$RUN_DIR/GUEST.md
	(cd "$REPO_ROOT" && go run ./hack/guesttable -nodelet "$RUN_DIR/results.json" \
		-kubelet "$RUN_DIR/results-kubelet.json" -runlog "$RUN_DIR/results/run.log" \
		-checkout "commit ${GUEST_CHECKOUT:-unknown}" -host-load "${HOST_LOAD_START:-}" -o "$out")
	log "side-by-side table in $out"
}

run() {
	local start=$SECONDS
	# GUEST.md says what was built and how busy the host was.
	HOST_LOAD_START=$(cat /proc/loadavg)
	GUEST_CHECKOUT=$(git -C "$REPO_ROOT" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
	git -C "$REPO_ROOT" diff --quiet HEAD 2>/dev/null || GUEST_CHECKOUT+="+dirty"
	payload
	boot
	results
	log "guest run took $((SECONDS - start))s"
}

case ${1:-} in
deps)
	need_root
	deps
	;;
image)
	need_root
	deps
	image
	;;
run)
	need_root
	deps
	image
	run
	;;
*)
	echo "usage: $0 deps|image|run" >&2
	exit 2
	;;
esac
