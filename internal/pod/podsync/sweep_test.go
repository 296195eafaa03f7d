package podsync

import (
	"errors"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodelet/nodelet/internal/runtime/container"
)

// holder keeps state for pods and releases those keep disowns.
type holder struct {
	name  string
	pods  []types.UID
	calls int
	err   error
}

func (h *holder) Name() string { return h.name }

func (h *holder) RetainOnly(keep func(types.UID) bool) error {
	h.calls++
	h.pods = slices.DeleteFunc(h.pods, func(uid types.UID) bool { return !keep(uid) })
	return h.err
}

func podWithUID(uid types.UID) *v1.Pod { return &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: uid}} }

// sweepOver sweeps owners over: "active" active, "known" (finished) known to a source,
// "running" in the runtime only and "gone" nowhere.
func sweepOver(owners []Retained, ready bool, listedAt time.Time) *Sweep {
	return &Sweep{
		Owners: owners, Ready: func() bool { return ready },
		Active: func() []*v1.Pod { return []*v1.Pod{podWithUID("active")} },
		Known:  func(uid types.UID) bool { return uid == "active" || uid == "known" },
		Runtime: func() ([]*container.RunningPod, time.Time) {
			return []*container.RunningPod{{UID: "running"}}, listedAt
		},
	}
}

// One pass tells every owner, each by its rule: one that keeps state for any pod still
// present keeps the finished and the runtime's pods; one that keeps only active pods' does not.
func TestSweepTellsEveryOwnerWhichPodsAreGone(t *testing.T) {
	all := []types.UID{"active", "known", "running", "gone"}
	cgroups := &holder{name: "cgroup", pods: slices.Clone(all), err: errors.New("busy")}
	memory := &holder{name: "memory", pods: slices.Clone(all)}
	allocs := &holder{name: "allocations", pods: slices.Clone(all)}
	sweepOver([]Retained{{Retainer: cgroups}, {Retainer: memory, ActiveOnly: true}, {Retainer: allocs}}, true, time.Now()).Once()
	if want := []types.UID{"active", "known", "running"}; !slices.Equal(cgroups.pods, want) || !slices.Equal(allocs.pods, want) {
		t.Errorf("cgroups kept %v, allocations %v; want %v (one owner's error does not stop the others)", cgroups.pods, allocs.pods, want)
	}
	if want := []types.UID{"active"}; !slices.Equal(memory.pods, want) {
		t.Errorf("memory kept %v, want %v", memory.pods, want)
	}
}

// Before every source has been handled, or before the runtime has been listed, a pod missing
// may only not be known yet: nothing is released.
func TestSweepWaitsForAWholeView(t *testing.T) {
	for name, s := range map[string]*Sweep{
		"sources not handled": sweepOver(nil, false, time.Now()),
		"runtime not listed":  sweepOver(nil, true, time.Time{}),
	} {
		h := &holder{name: "cgroup", pods: []types.UID{"gone"}}
		s.Owners = []Retained{{Retainer: h}}
		s.Once()
		if h.calls != 0 {
			t.Errorf("%s: owner told %d times", name, h.calls)
		}
	}
}
