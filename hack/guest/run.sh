#!/bin/bash
# run.sh runs inside the guest as the unit nodelet-guest.service (hack/guest.sh): it installs
# the payload's binaries, starts containerd 2 with the systemd driver, imports the test images
# and runs the in-guest tests, whose -v output and exit status it leaves in
# /payload/results for the host. The unit powers the guest off when this returns.
set -u
P=/payload
OUT=$P/results
mkdir -p "$OUT"
exec >>"$OUT/run.log" 2>&1
echo "guest: $(uname -r), $(stat -fc %T /sys/fs/cgroup) on /sys/fs/cgroup, up $(cut -d' ' -f1 /proc/uptime)s"
set -x
install -m 0755 "$P"/bin/* /usr/local/bin/
mkdir -p /opt/cni/bin
cp -a "$P"/cni/. /opt/cni/bin/
if ! bash "$P/containerd.sh" systemd; then
	echo 1 >"$OUT/exit"
	exit 1
fi
for tar in "$P"/images/*.tar; do
	ctr -n k8s.io images import "$tar" || { echo 1 >"$OUT/exit"; exit 1; }
done
set +x
# The suite runs once per subject (hack/guest.sh's GUEST_SUBJECTS): nodelet first, whose results are
# test.out and exit, then the upstream kubelet, test-kubelet.out and exit-kubelet, for the
# side-by-side table. Each starts on containerd with the systemd driver, as the tests expect.
cd /var/tmp # the payload is read-only to the tests except results/
for subject in $(cat "$P/subjects" 2>/dev/null || echo nodelet); do
	suffix=${subject/#nodelet/}
	suffix=${suffix:+-$suffix}
	if [[ $subject != nodelet ]]; then
		bash "$P/containerd.sh" systemd >/dev/null 2>&1 || echo "guest: containerd did not restart for $subject"
	fi
	start=$(cut -d' ' -f1 /proc/uptime)
	GUEST_SUBJECT=$subject "$P/guest.test" -test.v -test.timeout="${GUEST_TEST_TIMEOUT:-20m}" $(cat "$P/test-args" 2>/dev/null) >"$OUT/test$suffix.out" 2>&1
	echo $? >"$OUT/exit$suffix"
	awk -v s="$start" -v who="$subject" '{printf "guest: tests of %s took %.0fs\n", who, $1 - s}' /proc/uptime
	cp /var/tmp/"$subject"-guest-*.log "$OUT/" 2>/dev/null
	sync
done
