package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/nodelet/nodelet/hack/procstat"
)

// clockTicks is USER_HZ, the unit of utime/stime in /proc/<pid>/stat (100 on Linux).
const clockTicks = 100

// footprint is a kubelet's resource use averaged over a window.
type footprint struct {
	pods    int
	samples int     // RSS samples taken; 0: not measured
	rssMiB  float64 // mean of one VmRSS sample per second
	anonMiB float64 // the anonymous part of it (RssAnon); the rest is mostly the binary's pages
	cpuPct  float64 // utime+stime over the window, % of one core
}

// footprint samples the process for plan.footprintWindow.
func (b *bench) footprint(ctx context.Context, subject string, pid, pods int) (footprint, error) {
	window := b.p.footprintWindow
	progress(subject, "footprint at %d pods: sampling RSS and CPU for %v", pods, window)
	t0 := time.Now()
	cpu0, err := cpuTicks(pid)
	if err != nil {
		return footprint{}, err
	}
	var rssSum, anonSum float64
	samples := 0
	for time.Since(t0) < window {
		if err := sleep(ctx, time.Second); err != nil {
			return footprint{}, err
		}
		if err := b.alive(); err != nil {
			return footprint{}, err
		}
		mem := procstat.ReadMemory(pid)
		rssSum += mem.RSS
		anonSum += mem.Anon
		samples++
	}
	cpu1, err := cpuTicks(pid)
	if err != nil {
		return footprint{}, err
	}
	f := footprint{pods: pods, samples: samples, rssMiB: rssSum / float64(samples), anonMiB: anonSum / float64(samples),
		cpuPct: float64(cpu1-cpu0) / clockTicks / time.Since(t0).Seconds() * 100}
	progress(subject, "footprint at %d pods: RSS %.1f MiB (anonymous %.1f), CPU %.2f%% of a core", pods, f.rssMiB, f.anonMiB, f.cpuPct)
	return f, nil
}

// loadedFootprint starts plan.footprintPods pods, lets the kubelet settle, samples it, and
// removes the pods.
func (b *bench) loadedFootprint(ctx context.Context, subject, ns string, pid int) (footprint, error) {
	n := b.p.footprintPods
	if _, _, err := b.launch(ctx, subject, ns, "footprint", fmt.Sprintf("%d pods for the footprint", n), n, time.Minute+time.Duration(n)*2*time.Second); err != nil {
		return footprint{}, err
	}
	if err := sleep(ctx, b.p.settle); err != nil {
		return footprint{}, err
	}
	f, err := b.footprint(ctx, subject, pid, n)
	if err != nil {
		return f, err
	}
	return f, b.deleteRun(ctx, subject, ns, "footprint", n)
}

// cpuTicks reads utime+stime of pid.
func cpuTicks(pid int) (uint64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may hold spaces: count fields after its closing parenthesis,
	// where field 3 (state) has index 0, so utime (14) and stime (15) have 11 and 12.
	rest := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	if len(rest) < 13 {
		return 0, fmt.Errorf("short /proc/%d/stat", pid)
	}
	utime, err1 := strconv.ParseUint(rest[11], 10, 64)
	stime, err2 := strconv.ParseUint(rest[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("bad /proc/%d/stat", pid)
	}
	return utime + stime, nil
}
