package admission

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/nodelet/nodelet/internal/status"
)

// fakeTopology refuses every pod named in refuse and records what it was asked.
type fakeTopology struct {
	refuse map[string]bool
	asked  []string
}

func (f *fakeTopology) Admit(pod *v1.Pod) (bool, string, string) {
	f.asked = append(f.asked, pod.Name)
	if f.refuse[pod.Name] {
		return false, "TopologyAffinityError", "Resources cannot be allocated with Topology locality"
	}
	return true, "", ""
}

func TestTopologyDecidesLast(t *testing.T) {
	topo := &fakeTopology{refuse: map[string]bool{"unaligned": true}}
	a := &Admitter{Statuses: status.NewManager(nil), Topology: topo, Allocatable: func() v1.ResourceList {
		return v1.ResourceList{v1.ResourceCPU: resource.MustParse("2")}
	}}
	if ok, reason, msg := a.Admit(podRequesting("aligned", "1", ""), nil); !ok {
		t.Fatalf("aligned pod refused: %s %s", reason, msg)
	}
	ok, reason, msg := a.Admit(podRequesting("unaligned", "1", ""), nil)
	if ok || reason != "TopologyAffinityError" || msg != "Resources cannot be allocated with Topology locality" {
		t.Errorf("unaligned pod: ok=%v %q %q, want the topology manager's refusal", ok, reason, msg)
	}
	// A pod refused earlier never reaches the resource managers, so they set nothing aside.
	if ok, _, _ := a.Admit(podRequesting("too-big", "3", ""), nil); ok {
		t.Fatal("a pod over allocatable was admitted")
	}
	if want := []string{"aligned", "unaligned"}; len(topo.asked) != 2 || topo.asked[0] != want[0] || topo.asked[1] != want[1] {
		t.Errorf("topology asked about %v, want %v", topo.asked, want)
	}
}
