package main

import (
	"bufio"
	"fmt"
)

const guestTitle = "\n# Guest selection: cgroup v2 and the systemd driver\n\n"

// writeGuest is the guest selection: the upstream specs this cgroup v1 host without systemd
// cannot run (they need cgroup v2 files, or the systemd driver), run in the QEMU guest of the
// guest lane, then the columns in the shape of the parallel selection.
func (rp *report) writeGuest(w *bufio.Writer) {
	intro := fmt.Sprintf("The upstream node suite's specs that need cgroup v2 or systemd, which this cgroup v1 host "+
		"without systemd skips or never sees (the OOM killer's multi-process specs exist only on a cgroup v2 "+
		"node). `make guest-conformance` runs them in the guest lane's Debian bookworm guest (QEMU software "+
		"emulation, kernel 6.1, cgroup v2, systemd as PID 1, containerd 2 with runc's systemd driver), "+
		"against nodelet and then the %s, each run as the systemd unit `kubelet-e2e.service` on the "+
		"same configuration and joined to etcd and kube-apiserver v1.33.4 in the guest; the specs "+
		"restart it on the configuration they write through the guest's real systemctl. One spec at a "+
		"time, label filter `!Flaky`, focus below (from hack/conformance/guest.txt); emulation makes "+
		"every fork and exec 25-30x slower, so the selection is small and a spec the budget did not "+
		"reach is \"not run\".\n\n", upstreamName)
	fmt.Fprint(w, guestTitle, intro)
	rp.guest.writeBody(w, "hack/conformance/results/guest", "make guest-conformance")
}
