package nodeui

import (
	"context"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// How the graphs are sampled by default: every 15 s, the last hour kept (240 samples).
const (
	DefaultInterval = 15 * time.Second
	DefaultWindow   = time.Hour
)

// SummaryFunc returns the node's and the pods' CPU and memory figures, as
// stats.Provider.CPUAndMemorySummary does (one CRI call, no filesystem walks).
type SummaryFunc func(ctx context.Context) (*statsapi.Summary, error)

// Sampler keeps the node's and each pod's CPU and memory use over the last window, in memory.
// One goroutine (Run) samples everything at once, so one ring of sample times serves every
// series, and each series is two fixed rings of float32: a pod costs about 2 KB whatever its
// age. A pod missing from a sample is gone from the node, and its series is dropped.
type Sampler struct {
	summary  SummaryFunc
	interval time.Duration
	size     int // samples kept

	mu    sync.Mutex
	ticks int     // samples taken; sample k is at index k % size
	times []int64 // unix seconds of the kept samples
	node  *series
	pods  map[string]*podSeries // by pod UID
}

// series is one subject's values, aligned with Sampler.times.
type series struct {
	first int       // the tick of its first sample: earlier kept ticks have no value
	cpu   []float32 // millicores; NaN when unknown (no CPU rate yet, no running container)
	mem   []float32 // working-set bytes; NaN when unknown
}

type podSeries struct {
	namespace, name, uid string
	last                 int // the tick it was last seen in
	*series
}

// NewSampler returns a sampler taking a sample every interval and keeping window of them.
func NewSampler(summary SummaryFunc, interval, window time.Duration) *Sampler {
	size := max(int(window/interval), 2)
	return &Sampler{
		summary: summary, interval: interval, size: size,
		times: make([]int64, size), node: newSeries(0, size), pods: map[string]*podSeries{},
	}
}

func newSeries(first, size int) *series {
	return &series{first: first, cpu: make([]float32, size), mem: make([]float32, size)}
}

// Run samples at once and then every interval until ctx ends.
func (s *Sampler) Run(ctx context.Context) error {
	wait.NonSlidingUntilWithContext(ctx, s.sample, s.interval)
	return nil
}

func (s *Sampler) sample(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, s.interval)
	defer cancel()
	sum, err := s.summary(ctx)
	if err != nil {
		// A missed sample is a gap in the graphs, nothing worse.
		klog.V(2).InfoS("Node page: stats sample failed", "err", err)
		return
	}
	s.record(sum, time.Now())
}

// record stores one summary as the sample taken at "at".
func (s *Sampler) record(sum *statsapi.Summary, at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	tick, i := s.ticks, s.ticks%s.size
	s.times[i] = at.Unix()
	s.node.set(i, sum.Node.CPU, sum.Node.Memory)
	for _, p := range sum.Pods {
		ps := s.pods[p.PodRef.UID]
		if ps == nil {
			ps = &podSeries{namespace: p.PodRef.Namespace, name: p.PodRef.Name, uid: p.PodRef.UID, series: newSeries(tick, s.size)}
			s.pods[p.PodRef.UID] = ps
		}
		ps.last = tick
		ps.set(i, p.CPU, p.Memory)
	}
	for uid, ps := range s.pods {
		if ps.last != tick {
			delete(s.pods, uid)
		}
	}
	s.ticks++
}

func (sr *series) set(i int, cpu *statsapi.CPUStats, mem *statsapi.MemoryStats) {
	sr.cpu[i], sr.mem[i] = float32(math.NaN()), float32(math.NaN())
	if cpu != nil && cpu.UsageNanoCores != nil {
		sr.cpu[i] = float32(float64(*cpu.UsageNanoCores) / 1e6)
	}
	if mem != nil && mem.WorkingSetBytes != nil {
		sr.mem[i] = float32(*mem.WorkingSetBytes)
	}
}

// Stats is what the page graphs: sample times and, aligned with them, each subject's values.
type Stats struct {
	IntervalSeconds int64       `json:"intervalSeconds"`
	Times           []int64     `json:"times"` // unix seconds, oldest first
	Node            Series      `json:"node"`
	Pods            []PodSeries `json:"pods"` // by namespace and name
}

// Series holds one subject's values, one per sample time; null where unknown.
type Series struct {
	CPU    values `json:"cpuMillicores"`
	Memory values `json:"memoryBytes"`
}

// PodSeries is one pod's Series.
type PodSeries struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	UID       string `json:"uid"`
	Series
}

// Snapshot returns the samples kept, oldest first.
func (s *Sampler) Snapshot() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	from := max(s.ticks-s.size, 0)
	out := Stats{IntervalSeconds: int64(s.interval / time.Second), Times: make([]int64, 0, s.ticks-from), Pods: []PodSeries{}}
	for k := from; k < s.ticks; k++ {
		out.Times = append(out.Times, s.times[k%s.size])
	}
	out.Node = s.node.since(from, s.ticks, s.size)
	for _, ps := range s.pods {
		out.Pods = append(out.Pods, PodSeries{Namespace: ps.namespace, Name: ps.name, UID: ps.uid, Series: ps.since(from, s.ticks, s.size)})
	}
	slices.SortFunc(out.Pods, func(a, b PodSeries) int {
		return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
	return out
}

// since copies the values of ticks [from, to), NaN before the series began.
func (sr *series) since(from, to, size int) Series {
	out := Series{CPU: make(values, 0, to-from), Memory: make(values, 0, to-from)}
	nan := float32(math.NaN())
	for k := from; k < to; k++ {
		if k < sr.first {
			out.CPU, out.Memory = append(out.CPU, nan), append(out.Memory, nan)
			continue
		}
		out.CPU, out.Memory = append(out.CPU, sr.cpu[k%size]), append(out.Memory, sr.mem[k%size])
	}
	return out
}

// values encode as a JSON array of numbers, NaN as null, rounded to what a graph can show.
type values []float32

func (v values) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, 2+len(v)*8)
	b = append(b, '[')
	for i, x := range v {
		if i > 0 {
			b = append(b, ',')
		}
		if math.IsNaN(float64(x)) {
			b = append(b, "null"...)
			continue
		}
		b = strconv.AppendFloat(b, math.Round(float64(x)*10)/10, 'f', -1, 64)
	}
	return append(b, ']'), nil
}
