package deviceplugin

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/nodelet/nodelet/internal/host/topology"
)

// onNode is a healthy device attached to one NUMA node.
func onNode(id string, node int64) *pluginapi.Device {
	return &pluginapi.Device{ID: id, Health: pluginapi.Healthy, Topology: &pluginapi.TopologyInfo{Nodes: []*pluginapi.NUMANode{{ID: node}}}}
}

// numaPlugin starts a manager on a machine of the given NUMA nodes with one plugin serving
// devices.
func numaPlugin(t *testing.T, nodes []int, devices ...*pluginapi.Device) (*Manager, *fakePlugin) {
	t.Helper()
	m, dir := startManagerWith(t, Options{StopGracePeriod: time.Hour, NUMANodes: nodes})
	p := newFakePlugin(t, dir, "p.sock", devices...)
	if err := p.register(m, testResource); err != nil {
		t.Fatal(err)
	}
	waitCounts(t, m, testResource, counts{int64(len(devices)), int64(len(devices))})
	return m, p
}

// hintString prints hints as "0* 1* 0,1" (* preferred), in the order given.
func hintString(hints []topology.Hint) string {
	var parts []string
	for _, h := range hints {
		s := h.NUMANodes.String()
		if h.Preferred {
			s += "*"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, " ")
}

func TestHintsFollowTheDevicesNUMANodes(t *testing.T) {
	// Two devices on node 0, one on node 1.
	m, _ := numaPlugin(t, []int{0, 1}, onNode("a", 0), onNode("b", 0), onNode("c", 1))
	for _, tc := range []struct {
		n    int64
		want string
	}{
		{1, "0* 1* 0,1"},
		{2, "0* 0,1"},
		{3, "0,1*"},
		{4, ""},
	} {
		pod := podWith(fmt.Sprint("p", tc.n), testResource, tc.n)
		hints := m.ContainerHints(pod, &pod.Spec.Containers[0])
		got, ok := hints[testResource]
		if !ok || got == nil {
			t.Errorf("request %d: no hint list (%v), want %q", tc.n, hints, tc.want)
			continue
		}
		if s := hintString(got); s != tc.want {
			t.Errorf("request %d: hints %q, want %q", tc.n, s, tc.want)
		}
	}
}

func TestHintsLeaveOutHeldDevicesAndRegenerateAfterAllocation(t *testing.T) {
	m, _ := numaPlugin(t, []int{0, 1}, onNode("a", 0), onNode("b", 0), onNode("c", 1), onNode("d", 1))
	first := podWith("first", testResource, 2)
	if err := m.Allocate(first, &first.Spec.Containers[0], topology.Hint{NUMANodes: topology.MaskOf(1)}); err != nil {
		t.Fatal(err)
	}
	if got := m.ContainerDevices(first.UID, "c0"); len(got) != 1 || !slices.Equal(got[0].DeviceIds, []string{"c", "d"}) || got[0].Topology.Nodes[0].ID != 1 {
		t.Fatalf("affinity node 1 gave %v, want c and d on node 1", got)
	}
	// The held container's hints are regenerated from what it holds (a restart's re-admission).
	if got := hintString(m.ContainerHints(first, &first.Spec.Containers[0])[testResource]); got != "1* 0,1" {
		t.Errorf("held hints %q, want \"1* 0,1\"", got)
	}
	second := podWith("second", testResource, 2)
	if got := hintString(m.ContainerHints(second, &second.Spec.Containers[0])[testResource]); got != "0* 0,1" {
		t.Errorf("hints with node 1 taken %q, want \"0* 0,1\"", got)
	}
}

func TestNoTopologyMeansNoPreference(t *testing.T) {
	m, _ := numaPlugin(t, []int{0, 1}, device("a", pluginapi.Healthy))
	pod := podWith("p", testResource, 1)
	if hints := m.ContainerHints(pod, &pod.Spec.Containers[0]); len(hints) != 0 {
		t.Errorf("hints %v for devices without topology, want none", hints)
	}
	if hints := m.PodHints(pod); len(hints) != 0 {
		t.Errorf("pod hints %v for devices without topology, want none", hints)
	}
}

func TestPodHintsCountThePodsPeak(t *testing.T) {
	m, _ := numaPlugin(t, []int{0, 1}, onNode("a", 0), onNode("b", 0), onNode("c", 1), onNode("d", 1))
	rl := func(n int64) v1.ResourceRequirements {
		q := v1.ResourceList{testResource: *resource.NewQuantity(n, resource.DecimalSI)}
		return v1.ResourceRequirements{Limits: q, Requests: q}
	}
	always := v1.ContainerRestartPolicyAlways
	pod := podWith("p", testResource, 1)
	pod.Spec.InitContainers = []v1.Container{
		{Name: "side", RestartPolicy: &always, Resources: rl(1)},
		{Name: "init", Resources: rl(1)},
	}
	// Peak: the sidecar next to the app container, 2 (the init container runs beside the
	// sidecar only: also 2). Two fit on one node.
	if got := hintString(m.PodHints(pod)[testResource]); got != "0* 1* 0,1" {
		t.Errorf("pod hints %q, want \"0* 1* 0,1\"", got)
	}
	pod.Spec.InitContainers[1].Resources = rl(3) // 1 + 3 = 4: only both nodes
	if got := hintString(m.PodHints(pod)[testResource]); got != "0,1*" {
		t.Errorf("pod hints %q, want \"0,1*\"", got)
	}
}
