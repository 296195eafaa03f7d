package nodeui

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	"k8s.io/utils/ptr"

	"github.com/nodelet/nodelet/internal/testutil"
)

// fakeSummaries hands out summaries built by the test, one per call.
type fakeSummaries struct {
	mu    sync.Mutex
	next  *statsapi.Summary
	err   error
	calls int
}

func (f *fakeSummaries) summary(context.Context) (*statsapi.Summary, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	return f.next, f.err
}

// summaryOf is a summary with the node at nodeMilli millicores and each pod (by UID) at the
// given millicores, with memory at 1 MiB per millicore.
func summaryOf(nodeMilli uint64, pods map[string]uint64) *statsapi.Summary {
	s := &statsapi.Summary{Node: statsapi.NodeStats{
		CPU:    &statsapi.CPUStats{UsageNanoCores: ptr.To[uint64](nodeMilli * 1e6)},
		Memory: &statsapi.MemoryStats{WorkingSetBytes: ptr.To[uint64](nodeMilli << 20)},
	}}
	for uid, m := range pods {
		s.Pods = append(s.Pods, statsapi.PodStats{
			PodRef: statsapi.PodReference{Namespace: "ns", Name: "pod-" + uid, UID: uid},
			CPU:    &statsapi.CPUStats{UsageNanoCores: ptr.To[uint64](m * 1e6)},
			Memory: &statsapi.MemoryStats{WorkingSetBytes: ptr.To[uint64](m << 20)},
		})
	}
	return s
}

func TestSamplerKeepsABoundedWindow(t *testing.T) {
	s := NewSampler(nil, 15*time.Second, time.Minute) // 4 samples kept
	start := time.Unix(1_700_000_000, 0)
	for i := range 6 {
		s.record(summaryOf(uint64(100+i), map[string]uint64{"a": uint64(i)}), start.Add(time.Duration(i)*15*time.Second))
	}
	got := s.Snapshot()
	if len(got.Times) != 4 || got.Times[0] != start.Add(30*time.Second).Unix() || got.Times[3] != start.Add(75*time.Second).Unix() {
		t.Fatalf("times %v, want the last 4 samples, oldest first", got.Times)
	}
	if want := []float32{102, 103, 104, 105}; !equal(got.Node.CPU, want) {
		t.Errorf("node cpu %v, want %v", got.Node.CPU, want)
	}
	if len(got.Pods) != 1 || !equal(got.Pods[0].CPU, []float32{2, 3, 4, 5}) || got.Pods[0].Memory[3] != 5<<20 {
		t.Errorf("pod series %+v", got.Pods)
	}
	if got.IntervalSeconds != 15 {
		t.Errorf("interval %d", got.IntervalSeconds)
	}
}

func TestSamplerDropsGonePodsAndPadsNewOnes(t *testing.T) {
	s := NewSampler(nil, 15*time.Second, time.Hour)
	at := time.Unix(1_700_000_000, 0)
	s.record(summaryOf(10, map[string]uint64{"old": 1, "stays": 2}), at)
	s.record(summaryOf(10, map[string]uint64{"stays": 3, "new": 4}), at.Add(15*time.Second))
	got := s.Snapshot()
	uids := map[string]PodSeries{}
	for _, p := range got.Pods {
		uids[p.UID] = p
	}
	if _, ok := uids["old"]; ok || len(uids) != 2 {
		t.Fatalf("pods %v: the pod missing from the last sample should be dropped", got.Pods)
	}
	if p := uids["new"]; len(p.CPU) != 2 || !isNaN(p.CPU[0]) || p.CPU[1] != 4 {
		t.Errorf("a pod first seen in the second sample: cpu %v, want [NaN 4]", p.CPU)
	}
	if p := uids["stays"]; !equal(p.CPU, []float32{2, 3}) {
		t.Errorf("stays: cpu %v", p.CPU)
	}
	// A gone pod that comes back starts a new series.
	s.record(summaryOf(10, map[string]uint64{"old": 9}), at.Add(30*time.Second))
	for _, p := range s.Snapshot().Pods {
		if p.UID == "old" && (!isNaN(p.CPU[0]) || !isNaN(p.CPU[1]) || p.CPU[2] != 9) {
			t.Errorf("returning pod kept its old values: %v", p.CPU)
		}
	}
}

func TestSamplerUnknownValuesAreNull(t *testing.T) {
	s := NewSampler(nil, 15*time.Second, time.Hour)
	sum := summaryOf(10, map[string]uint64{"a": 1})
	sum.Node.CPU.UsageNanoCores = nil // no rate yet
	sum.Pods[0].CPU, sum.Pods[0].Memory = nil, nil
	s.record(sum, time.Unix(1_700_000_000, 0))
	body, err := json.Marshal(s.Snapshot())
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Node struct {
			CPU []*float64 `json:"cpuMillicores"`
			Mem []*float64 `json:"memoryBytes"`
		} `json:"node"`
		Pods []struct {
			CPU []*float64 `json:"cpuMillicores"`
		} `json:"pods"`
	}
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	if got.Node.CPU[0] != nil || got.Node.Mem[0] == nil || *got.Node.Mem[0] != 10<<20 || got.Pods[0].CPU[0] != nil {
		t.Errorf("JSON %s: want null for the unknown values and 10 MiB of node memory", body)
	}
}

func TestSamplerRunSamplesUntilStopped(t *testing.T) {
	f := &fakeSummaries{next: summaryOf(5, nil)}
	s := NewSampler(f.summary, 10*time.Millisecond, time.Second)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { s.Run(ctx); close(done) }()
	testutil.Eventually(t, "3 samples", func() bool { return len(s.Snapshot().Times) >= 3 })
	// A failing summary is a gap, not a sample.
	f.mu.Lock()
	f.err, f.calls = errors.New("runtime down"), 0
	f.mu.Unlock()
	before := len(s.Snapshot().Times)
	for {
		f.mu.Lock()
		calls := f.calls
		f.mu.Unlock()
		if calls >= 2 {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if after := len(s.Snapshot().Times); after > before+1 { // one sample may have been in flight
		t.Errorf("failed samples were recorded: %d → %d", before, after)
	}
	cancel()
	<-done
}

func equal(v values, want []float32) bool {
	if len(v) != len(want) {
		return false
	}
	for i := range v {
		if v[i] != want[i] {
			return false
		}
	}
	return true
}

func isNaN(f float32) bool { return f != f }
