// Package eviction watches the node's memory, disk and process headroom against the
// configured thresholds, reports pressure, refuses pods the node cannot hold, reclaims
// node-level disk (dead containers, unused images) and, when that is not enough, evicts one
// pod per cycle, ranked as the upstream kubelet ranks them.
package eviction

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// Signal is an eviction signal as the kubelet configuration names it.
type Signal string

const (
	MemoryAvailable   Signal = "memory.available"
	NodeFsAvailable   Signal = "nodefs.available"
	NodeFsInodesFree  Signal = "nodefs.inodesFree"
	ImageFsAvailable  Signal = "imagefs.available"
	ImageFsInodesFree Signal = "imagefs.inodesFree"
	PIDAvailable      Signal = "pid.available"
	// AllocatableMemoryAvailable is what the pods' cgroup limit (allocatable, with
	// enforceNodeAllocatable: [pods]) leaves; it gets the memory.available thresholds.
	AllocatableMemoryAvailable Signal = "allocatableMemory.available"
)

// signalOrder is the order thresholds are acted on in: memory first, as upstream does.
var signalOrder = []Signal{MemoryAvailable, AllocatableMemoryAvailable, NodeFsAvailable, NodeFsInodesFree, ImageFsAvailable, ImageFsInodesFree, PIDAvailable}

// Value is a threshold amount: a quantity, or a share of the signal's capacity.
type Value struct {
	Quantity   *resource.Quantity
	Percentage float64 // 0..1, used when Quantity is nil
}

func (v Value) amount(capacity int64) int64 {
	if v.Quantity != nil {
		return v.Quantity.Value()
	}
	return int64(math.Ceil(v.Percentage * float64(capacity)))
}

func (v Value) String() string {
	if v.Quantity != nil {
		return v.Quantity.String()
	}
	return strconv.FormatFloat(v.Percentage*100, 'f', -1, 64) + "%"
}

// Threshold is one configured threshold: the signal is short when available < Value.
type Threshold struct {
	Signal      Signal
	Value       Value
	GracePeriod time.Duration // 0 for hard thresholds
	Hard        bool
	MinReclaim  Value // extra headroom to reach before the threshold counts as resolved
}

// Config is the eviction part of the kubelet configuration.
type Config struct {
	Hard, Soft, SoftGracePeriod, MinimumReclaim map[string]string
	MaxPodGracePeriodSeconds                    int64
	PressureTransitionPeriod                    time.Duration
	LocalStorageCapacityIsolation               bool
	// PodsAllocatableEnforced (enforceNodeAllocatable lists pods) copies each memory.available
	// threshold to allocatableMemory.available, as upstream does.
	PodsAllocatableEnforced bool
	// KernelMemcgNotification registers each memory threshold with the kernel (cgroup v1), so
	// a crossing starts a cycle at once instead of at the next poll.
	KernelMemcgNotification bool
}

// ParseThresholds reads the hard and soft thresholds with their grace periods and minimum
// reclaims. The configuration was validated; errors still name the field.
func ParseThresholds(c Config) ([]Threshold, error) {
	var out []Threshold
	for _, set := range []struct {
		field string
		m     map[string]string
		hard  bool
	}{{"evictionHard", c.Hard, true}, {"evictionSoft", c.Soft, false}} {
		for _, name := range sortedKeys(set.m) {
			v, err := parseValue(set.m[name])
			if err != nil {
				return nil, fmt.Errorf("%s[%q]: %w", set.field, name, err)
			}
			t := Threshold{Signal: Signal(name), Value: v, Hard: set.hard}
			if !set.hard {
				if t.GracePeriod, err = time.ParseDuration(c.SoftGracePeriod[name]); err != nil {
					return nil, fmt.Errorf("evictionSoftGracePeriod[%q]: %w", name, err)
				}
			}
			if r, ok := c.MinimumReclaim[name]; ok {
				if t.MinReclaim, err = parseValue(r); err != nil {
					return nil, fmt.Errorf("evictionMinimumReclaim[%q]: %w", name, err)
				}
			}
			out = append(out, t)
			if c.PodsAllocatableEnforced && t.Signal == MemoryAvailable {
				t.Signal = AllocatableMemoryAvailable
				out = append(out, t)
			}
		}
	}
	return out, nil
}

func parseValue(s string) (Value, error) {
	if pct, ok := strings.CutSuffix(s, "%"); ok {
		p, err := strconv.ParseFloat(pct, 64)
		if err != nil || p < 0 || p > 100 {
			return Value{}, fmt.Errorf("bad percentage %q", s)
		}
		return Value{Percentage: p / 100}, nil
	}
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return Value{}, err
	}
	return Value{Quantity: &q}, nil
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// observation is one signal's available amount and the capacity percentages refer to; for
// the memory signals also the inactive file pages, which the usage counts and they do not.
type observation struct {
	available, capacity int64
	inactiveFile        int64
}

// observe reads every signal the summary carries; a signal without data is left out.
func observe(s *statsapi.Summary) map[Signal]observation {
	obs := map[Signal]observation{}
	n := s.Node
	if o, ok := memoryObservation(n.Memory); ok {
		obs[MemoryAvailable] = o
	}
	for _, sc := range n.SystemContainers {
		if o, ok := memoryObservation(sc.Memory); ok && sc.Name == statsapi.SystemContainerPods {
			obs[AllocatableMemoryAvailable] = o
		}
	}
	if fs := n.Fs; fs != nil {
		addFs(obs, fs, NodeFsAvailable, NodeFsInodesFree)
	}
	if n.Runtime != nil && n.Runtime.ImageFs != nil {
		addFs(obs, n.Runtime.ImageFs, ImageFsAvailable, ImageFsInodesFree)
	}
	if r := n.Rlimit; r != nil && r.MaxPID != nil && r.NumOfRunningProcesses != nil {
		obs[PIDAvailable] = observation{available: *r.MaxPID - *r.NumOfRunningProcesses, capacity: *r.MaxPID}
	}
	return obs
}

func memoryObservation(m *statsapi.MemoryStats) (observation, bool) {
	if m == nil || m.AvailableBytes == nil || m.WorkingSetBytes == nil {
		return observation{}, false
	}
	o := observation{available: int64(*m.AvailableBytes), capacity: int64(*m.AvailableBytes + *m.WorkingSetBytes)}
	if m.UsageBytes != nil && *m.UsageBytes > *m.WorkingSetBytes {
		o.inactiveFile = int64(*m.UsageBytes - *m.WorkingSetBytes)
	}
	return o, true
}

func addFs(obs map[Signal]observation, fs *statsapi.FsStats, bytes, inodes Signal) {
	if fs.AvailableBytes != nil && fs.CapacityBytes != nil {
		obs[bytes] = observation{available: int64(*fs.AvailableBytes), capacity: int64(*fs.CapacityBytes)}
	}
	if fs.InodesFree != nil && fs.Inodes != nil {
		obs[inodes] = observation{available: int64(*fs.InodesFree), capacity: int64(*fs.Inodes)}
	}
}

// short reports whether t is crossed: available below the threshold, plus its minimum
// reclaim when withReclaim (a threshold already acted on must clear that much headroom).
func (t Threshold) short(o observation, withReclaim bool) bool {
	need := t.Value.amount(o.capacity)
	if withReclaim {
		need += t.MinReclaim.amount(o.capacity)
	}
	return o.available < need
}

// resourceOf names what a signal measures, as eviction messages say it.
func resourceOf(s Signal) string {
	switch s {
	case MemoryAvailable, AllocatableMemoryAvailable:
		return "memory"
	case NodeFsInodesFree, ImageFsInodesFree:
		return "inodes"
	case PIDAvailable:
		return "pids"
	}
	return "ephemeral-storage"
}

func isDisk(s Signal) bool { return !isMemory(s) && s != PIDAvailable }

func isMemory(s Signal) bool { return s == MemoryAvailable || s == AllocatableMemoryAvailable }
