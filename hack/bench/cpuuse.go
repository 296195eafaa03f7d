package main

import (
	"fmt"
	"os"
	"time"

	"github.com/prometheus/procfs"
)

// cpuGroups are the parts of the machine a pod start goes through, in report order; the CPU
// time of each is summed over its processes, with the children they waited for (containerd
// runs the CNI plugins, each shim the runc calls of its pod).
var cpuGroups = []struct{ name, label string }{
	{"kubelet", "the kubelet"},
	{"apiserver", "kube-apiserver"},
	{"etcd", "etcd"},
	{"controllers", "kube-scheduler and kube-controller-manager"},
	{"containerd", "containerd (with the CNI plugins it ran)"},
	{"shims", "containerd shims (with their runc calls)"},
	{"bench", "the bench (creates, watches, CRI calls of the floor)"},
}

// cpuGroupOf maps a process to its group by its command name (the kernel keeps 15 bytes of
// it); "" for the rest.
func cpuGroupOf(pid int, comm string) string {
	switch {
	case pid == os.Getpid():
		return "bench"
	case comm == "nodelet" || comm == "kubelet":
		return "kubelet"
	case comm == "kube-apiserver":
		return "apiserver"
	case comm == "etcd":
		return "etcd"
	case comm == "kube-scheduler" || comm == "kube-controller":
		return "controllers"
	case comm == "containerd":
		return "containerd"
	case comm == "containerd-shim":
		return "shims"
	}
	return ""
}

// cpuUse is where the machine's CPU went over one run: seconds of CPU per group, all CPUs'
// busy time, and the run's wall time. Short-lived processes nobody in a group reaped (and
// the kernel's own work) show only in busy.
type cpuUse struct {
	wall    time.Duration
	busy    float64
	byGroup map[string]float64
}

// capacity is the CPU seconds the machine had over the run.
func (u cpuUse) capacity() float64 { return u.wall.Seconds() * float64(cpuCount()) }

// rest is busy time no group accounts for.
func (u cpuUse) rest() float64 {
	r := u.busy
	for _, v := range u.byGroup {
		r -= v
	}
	return max(r, 0)
}

// procCPU is one process's CPU seconds, children it waited for included.
type procCPU struct {
	group string
	secs  float64
}

// cpuMeter measures cpuUse from its start to done.
type cpuMeter struct {
	start     time.Time
	busy0     float64
	procs0    map[int]procCPU
	userHertz float64
}

func startCPUMeter() *cpuMeter {
	m := &cpuMeter{start: time.Now(), userHertz: 100}
	m.busy0, m.procs0 = busySeconds(m.userHertz), groupedProcs(m.userHertz)
	return m
}

// done reads the counters again: a process seen both times counts its difference, one born
// since counts whole.
func (m *cpuMeter) done() cpuUse {
	u := cpuUse{wall: time.Since(m.start), busy: busySeconds(m.userHertz) - m.busy0, byGroup: map[string]float64{}}
	for pid, p := range groupedProcs(m.userHertz) {
		before := m.procs0[pid]
		if before.group != p.group {
			before.secs = 0 // a new process under a reused pid
		}
		u.byGroup[p.group] += max(p.secs-before.secs, 0)
	}
	return u
}

// busySeconds is the time all CPUs spent not idle, from /proc/stat.
func busySeconds(userHertz float64) float64 {
	idle, total := cpuTimes()
	return float64(total-idle) / userHertz
}

// groupedProcs reads the CPU time of every process of a group.
func groupedProcs(userHertz float64) map[int]procCPU {
	out := map[int]procCPU{}
	procs, err := procfs.AllProcs()
	if err != nil {
		return out
	}
	for _, p := range procs {
		st, err := p.Stat()
		if err != nil {
			continue // gone meanwhile
		}
		g := cpuGroupOf(p.PID, st.Comm)
		if g == "" {
			continue
		}
		ticks := float64(st.UTime+st.STime) + float64(st.CUTime+st.CSTime)
		out[p.PID] = procCPU{group: g, secs: ticks / userHertz}
	}
	return out
}

// renderCPU shows where the machine's CPU went during one kind of run, for the floor and each
// kubelet: each row the median over the rounds. On 2 CPUs a burst is CPU-bound, so CPU the
// kubelet and the control plane spend is time the runtime's work waits for.
func renderCPU(w writer, rs []round, what string, ofFloor func(*floorResult) *cpuUse, ofSubject func(*subjectResult) *cpuUse) {
	w("| %s | raw CRI floor | nodelet | upstream kubelet |", what)
	w("|---|---|---|---|")
	row := func(name string, unit func(float64) string, get func(cpuUse) float64) {
		fl := fromFloor(rs, func(f *floorResult) (float64, bool) { return cpuGet(ofFloor(f), get) })
		n := fromSubjects(rs, nodeletOf, func(s *subjectResult) (float64, bool) { return cpuGet(ofSubject(s), get) })
		u := fromSubjects(rs, upstreamOf, func(s *subjectResult) (float64, bool) { return cpuGet(ofSubject(s), get) })
		w("| %s | %s | %s | %s |", name, fl.cell(unit), n.cell(unit), u.cell(unit))
	}
	row("wall time (first create call → all Running)", fmtSec, func(u cpuUse) float64 { return u.wall.Seconds() })
	row(fmt.Sprintf("CPU time the machine had (wall × %d CPUs)", cpuCount()), fmtSec, cpuUse.capacity)
	row("CPU busy", fmtSec, func(u cpuUse) float64 { return u.busy })
	row("CPU busy, share of what the machine had", fmtPct, func(u cpuUse) float64 { return 100 * u.busy / max(u.capacity(), 1e-9) })
	for _, g := range cpuGroups {
		row("of which "+g.label, fmtSec, func(u cpuUse) float64 { return u.byGroup[g.name] })
	}
	row("of which the rest (the pods' own processes, short-lived processes no group reaped, the kernel)", fmtSec, cpuUse.rest)
	if s := extraOverFloor(rs, ofFloor, ofSubject); s != "" {
		w("\n%s", s)
	}
}

// extraOverFloor says, from the medians, how nodelet's wall time above the floor's compares
// with the CPU it and the control plane add: on a busy machine the one is the other over the
// CPU count.
func extraOverFloor(rs []round, ofFloor func(*floorResult) *cpuUse, ofSubject func(*subjectResult) *cpuUse) string {
	med := func(fromNodelet bool, get func(cpuUse) float64) float64 {
		if fromNodelet {
			return fromSubjects(rs, nodeletOf, func(s *subjectResult) (float64, bool) { return cpuGet(ofSubject(s), get) }).median()
		}
		return fromFloor(rs, func(f *floorResult) (float64, bool) { return cpuGet(ofFloor(f), get) }).median()
	}
	wall := func(u cpuUse) float64 { return u.wall.Seconds() }
	busy := func(u cpuUse) float64 { return u.busy }
	node := func(u cpuUse) float64 {
		return u.byGroup["kubelet"] + u.byGroup["apiserver"] + u.byGroup["etcd"] + u.byGroup["controllers"]
	}
	runtime := func(u cpuUse) float64 { return u.byGroup["containerd"] + u.byGroup["shims"] + u.rest() }
	if med(false, wall) == 0 || med(true, wall) == 0 {
		return ""
	}
	return fmt.Sprintf("nodelet took %s longer than the floor; the machine was busy %s more, %s over %d CPUs. "+
		"Of that, the kubelet and the control plane (API server, etcd, scheduler, controller-manager) added %s, "+
		"the runtime's side (containerd, shims, the rest) %s.",
		fmtSec(med(true, wall)-med(false, wall)), fmtSec(med(true, busy)-med(false, busy)),
		fmtSec((med(true, busy)-med(false, busy))/float64(cpuCount())), cpuCount(),
		fmtSec(med(true, node)-med(false, node)), fmtSec(med(true, runtime)-med(false, runtime)))
}

func cpuGet(u *cpuUse, get func(cpuUse) float64) (float64, bool) {
	if u == nil {
		return 0, false
	}
	return get(*u), true
}
