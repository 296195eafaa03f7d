package main

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nodelet/nodelet/hack/buildstamp"
)

// round is one pass over every subject.
type round struct {
	floor    *floorResult
	nodelet  *subjectResult
	upstream *subjectResult
	conds    []condition // the machine before each subject, in the order they ran
}

// condition is the machine's state just before a subject ran, and whether anything else was
// seen on the runtime while it ran.
type condition struct {
	round   int
	subject string
	load    string  // /proc/loadavg 1/5/15 min
	idlePct float64 // machine idle CPU over quietSample, after waiting for quiet
	foreign string  // sandboxes the bench did not make, seen while the subject ran
	minIdle float64
}

// flagged says whether a figure taken under this condition may be skewed by other work.
func (c condition) flagged() bool { return c.idlePct < c.minIdle || c.foreign != "" }

// runRounds takes every subject's figures plan.rounds times, rotating the order so each subject
// runs first, second and last once; density and the upstream kubelet's second configuration
// run in the last round only (they are the long ones).
func (b *bench) runRounds(ctx context.Context, res *results) error {
	kinds := []string{"floor", "nodelet"}
	var upstream, closest *subject
	if b.p.upstream {
		kinds = append(kinds, "kubelet")
		var err error
		if upstream, err = b.kubeletSubject(false); err != nil {
			return fmt.Errorf("upstream kubelet: %w", err)
		}
		// Its second configuration differs in stats and pulls, which the DRA row alone does not take.
		if b.p.only != "dra" {
			if closest, err = b.kubeletSubject(true); err != nil {
				return fmt.Errorf("upstream kubelet: %w", err)
			}
		}
	}
	nodelet := b.nodeletSubject(false)
	for r := 0; r < b.p.rounds; r++ {
		last := r == b.p.rounds-1
		rd := round{}
		for _, kind := range rotate(kinds, r) {
			progress("bench", "round %d of %d: %s", r+1, b.p.rounds, kind)
			var err error
			switch kind {
			case "floor":
				err = b.guarded(ctx, &rd, r, "floor", nil, func() error {
					rd.floor, err = b.runFloor(ctx)
					return err
				})
			case "nodelet":
				rd.nodelet, err = b.runSubject(ctx, &rd, r, nodelet, scope{density: last})
			case "kubelet":
				rd.upstream, err = b.runSubject(ctx, &rd, r, upstream, scope{density: last})
			}
			if err != nil {
				return fmt.Errorf("round %d, %s: %w", r+1, kind, err)
			}
		}
		res.rounds = append(res.rounds, rd)
	}
	if closest != nil {
		rd := &res.rounds[len(res.rounds)-1]
		var err error
		if res.closest, err = b.runSubject(ctx, rd, b.p.rounds-1, closest, scope{}); err != nil {
			return fmt.Errorf("%s: %w", closest.name, err)
		}
	}
	if b.p.only != "" {
		return nil
	}
	untimed := b.nodeletSubject(true)
	var err error
	if res.untimed, err = b.runSubject(ctx, &res.rounds[len(res.rounds)-1], b.p.rounds-1, untimed, scope{}); err != nil {
		return fmt.Errorf("%s: %w", untimed.name, err)
	}
	return nil
}

// rotate returns kinds shifted left by r.
func rotate(kinds []string, r int) []string {
	out := make([]string, 0, len(kinds))
	for i := range kinds {
		out = append(out, kinds[(i+r)%len(kinds)])
	}
	return out
}

// guarded waits for a quiet machine, records its condition, and runs fn while watching the
// runtime for sandboxes the bench did not make; onForeign (the upstream kubelet's kill) runs
// when one appears. Every subject gets the same guard, so its polling costs all alike.
func (b *bench) guarded(ctx context.Context, rd *round, r int, subject string, onForeign func(string), fn func() error) error {
	c := b.waitQuiet(ctx, subject)
	c.round = r
	gctx, cancel := context.WithCancel(ctx)
	var mu sync.Mutex
	done := make(chan struct{})
	go func() {
		defer close(done)
		// The upstream kubelet (onForeign set) would remove even a dead foreign sandbox, and
		// ensureRuntimeFree made sure there were none: any that appears counts. For the others
		// only running ones are other work.
		b.watchForeign(gctx, onForeign == nil, func(foreign string) {
			mu.Lock()
			c.foreign = foreign
			mu.Unlock()
			if onForeign != nil {
				onForeign(foreign)
			}
		})
	}()
	err := fn()
	cancel()
	<-done
	rd.conds = append(rd.conds, c)
	if c.flagged() {
		progress(subject, "FLAGGED: idle %.0f%% before the run (want ≥ %.0f%%), foreign sandboxes: %q", c.idlePct, c.minIdle, c.foreign)
	}
	return err
}

// quietSample is how long the machine's idle CPU is sampled before a subject.
const quietSample = 3 * time.Second

// waitQuiet samples the machine's idle CPU until it reaches plan.minIdlePct (for up to a
// minute: the previous subject's pods may still be going away) and returns what it saw.
func (b *bench) waitQuiet(ctx context.Context, subject string) condition {
	c := condition{subject: subject, minIdle: b.p.minIdlePct}
	deadline := time.Now().Add(time.Minute)
	for {
		c.idlePct = machineIdle(ctx, quietSample)
		c.load = buildstamp.LoadAvg()
		if c.idlePct >= b.p.minIdlePct || time.Now().After(deadline) || ctx.Err() != nil {
			progress(subject, "machine before the run: idle %.0f%% of %d CPUs, load %s", c.idlePct, cpuCount(), c.load)
			return c
		}
	}
}

// machineIdle is the share of all CPUs' time spent idle (idle + iowait) over d, from /proc/stat.
func machineIdle(ctx context.Context, d time.Duration) float64 {
	idle0, total0 := cpuTimes()
	if err := sleep(ctx, d); err != nil {
		return 0
	}
	idle1, total1 := cpuTimes()
	if total1 <= total0 {
		return 0
	}
	return 100 * float64(idle1-idle0) / float64(total1-total0)
}

// cpuTimes reads the aggregate "cpu" line of /proc/stat: idle+iowait and the sum of all fields.
func cpuTimes() (idle, total uint64) {
	data, _ := os.ReadFile("/proc/stat")
	line, _, _ := strings.Cut(string(data), "\n")
	fields := strings.Fields(line)
	if len(fields) < 6 || fields[0] != "cpu" {
		return 0, 0
	}
	// user nice system idle iowait irq softirq; steal is time the machine did not have, and
	// guest time is counted in user already.
	for i, f := range fields[1:8] {
		v, _ := strconv.ParseUint(f, 10, 64)
		total += v
		if i == 3 || i == 4 {
			idle += v
		}
	}
	return idle, total
}

func cpuCount() int { return runtime.NumCPU() }
