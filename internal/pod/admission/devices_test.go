package admission

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodelet/nodelet/internal/pod/status"
)

const (
	pluginResource v1.ResourceName = "example.com/gpu"
	clusterDongle  v1.ResourceName = "example.com/dongle" // advertised by an administrator, no plugin
)

// fakeDevices serves pluginResource and, as the topology manager with its device provider,
// hands out a fixed number of devices, one per requested unit, and takes back a released pod's.
type fakeDevices struct {
	free     int64
	admitted []string
	held     map[types.UID]int64
}

func (f *fakeDevices) Manages(name v1.ResourceName) bool { return name == pluginResource }

func (f *fakeDevices) Admit(pod *v1.Pod) (bool, string, string) {
	want := Requests(pod)[pluginResource]
	if want.Value() > f.free {
		return false, "UnexpectedAdmissionError", "Allocate failed due to not enough free devices, which is unexpected"
	}
	f.free -= want.Value()
	if f.held == nil {
		f.held = map[types.UID]int64{}
	}
	f.held[pod.UID] += want.Value()
	f.admitted = append(f.admitted, pod.Name)
	return true, "", ""
}

func (f *fakeDevices) Release(uid types.UID) {
	f.free += f.held[uid]
	delete(f.held, uid)
}

func podWithExtended(name string, rl v1.ResourceList) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name)},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Resources: v1.ResourceRequirements{Requests: rl, Limits: rl}}}}}
}

func qty(n int64) resource.Quantity { return *resource.NewQuantity(n, resource.DecimalSI) }

func TestDevicePluginResourcesMustBeFree(t *testing.T) {
	devices := &fakeDevices{free: 1}
	a := &Admitter{Statuses: status.NewManager(nil), Devices: devices, Topology: devices, Allocatable: func() v1.ResourceList {
		// The posted allocatable may lag behind the plugin; the device manager decides.
		return v1.ResourceList{v1.ResourceCPU: resource.MustParse("2"), pluginResource: qty(0)}
	}}
	first := podWithExtended("first", v1.ResourceList{pluginResource: qty(1)})
	if ok, reason, msg := a.Admit(first, nil); !ok {
		t.Fatalf("first pod refused: %s %s", reason, msg)
	}
	second := podWithExtended("second", v1.ResourceList{pluginResource: qty(1)})
	ok, reason, msg := a.Admit(second, []*v1.Pod{first})
	if ok || reason != "UnexpectedAdmissionError" || !strings.Contains(msg, "not enough free devices") {
		t.Fatalf("second pod: ok=%v %q %q, want UnexpectedAdmissionError", ok, reason, msg)
	}
	// A pod over the cpu allocatable is refused after its device was set aside, and gives it back.
	devices.free = 1
	big := podWithExtended("big", v1.ResourceList{pluginResource: qty(1), v1.ResourceCPU: resource.MustParse("3")})
	if ok, reason, _ := a.Admit(big, nil); ok || reason != "OutOfcpu" {
		t.Fatalf("big pod: ok=%v %q, want OutOfcpu", ok, reason)
	}
	if devices.free != 1 || devices.held[big.UID] != 0 {
		t.Errorf("after the refusal %d devices free, big holds %d; want its device back", devices.free, devices.held[big.UID])
	}
}

func TestOtherExtendedResourcesMustFitAllocatable(t *testing.T) {
	a := &Admitter{Statuses: status.NewManager(nil), Devices: &fakeDevices{free: 5}, Allocatable: func() v1.ResourceList {
		return v1.ResourceList{clusterDongle: qty(2)}
	}}
	holder := podWithExtended("holder", v1.ResourceList{clusterDongle: qty(1)})
	if ok, reason, msg := a.Admit(holder, nil); !ok {
		t.Fatalf("holder refused: %s %s", reason, msg)
	}
	over := podWithExtended("over", v1.ResourceList{clusterDongle: qty(2)})
	ok, reason, msg := a.Admit(over, []*v1.Pod{holder})
	if ok || reason != "OutOf"+string(clusterDongle) || !strings.Contains(msg, "requested: 2, used: 1, capacity: 2") {
		t.Fatalf("over pod: ok=%v %q %q", ok, reason, msg)
	}
	// An extended resource the node does not advertise is not the node's to check.
	unknown := podWithExtended("unknown", v1.ResourceList{"other.example.com/thing": qty(9)})
	if ok, reason, msg := a.Admit(unknown, nil); !ok {
		t.Fatalf("unknown resource refused: %s %s", reason, msg)
	}
}
