// Package admission decides whether a new pod may run on this node.
package admission

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"

	"github.com/nodelet/nodelet/internal/qos"
	"github.com/nodelet/nodelet/internal/sidecar"
	"github.com/nodelet/nodelet/internal/status"
)

// ReasonUnexpectedAdmissionError is the reason of a pod whose devices could not be set aside,
// as upstream reports it.
const ReasonUnexpectedAdmissionError = "UnexpectedAdmissionError"

// Devices sets device plugin devices aside for admitted pods (*deviceplugin.Manager).
type Devices interface {
	// Manages says whether a device plugin serves the resource; Admit checks those.
	Manages(name v1.ResourceName) bool
	// Admit sets devices aside for pod's containers, or says why it cannot.
	Admit(pod *v1.Pod, active []*v1.Pod) error
}

// Topology aligns and sets aside the pod's CPUs, memory and devices on the machine's NUMA
// nodes, or says why it cannot (*topologymanager.Manager).
type Topology interface {
	Admit(pod *v1.Pod) (ok bool, reason, message string)
}

// Admitter checks the pod count against maxPods and resource requests against allocatable.
type Admitter struct {
	MaxPods  int
	Statuses *status.Manager
	// Allocatable returns the node's allocatable resources; nil or empty skips the check.
	Allocatable func() v1.ResourceList
	// Node returns the node (labels, taints) the scheduler's predicates are checked against;
	// nil, or a nil node (not registered yet), skips them.
	Node func() *v1.Node
	// Devices, when set, must find devices for the pod's device plugin resources.
	Devices Devices
	// Topology, when set, runs last: the resource managers set resources aside only for a pod
	// every other check has let through.
	Topology Topology
	// AllowedUnsafeSysctls are the unsafe sysctls (or "prefix*" patterns) pods may set.
	AllowedUnsafeSysctls []string
	// HostHasAppArmor reports whether the kernel enforces AppArmor; nil reads it from the host.
	HostHasAppArmor func() bool
	// Pressure, when set, refuses pods the node cannot hold under pressure (the eviction
	// manager's Admit).
	Pressure func(pod *v1.Pod) (bool, string, string)
	// Shutdown, when set, refuses every pod while the node shuts down.
	Shutdown func(pod *v1.Pod) (bool, string, string)
	// Allocated, when set, returns a pod with the resources allocated to it (in-place resize).
	Allocated func(pod *v1.Pod) *v1.Pod
	// Recorder, when set, gets a Warning event on the pod for each refusal, as upstream posts.
	Recorder record.EventRecorder
	// RuntimeFeatures says what the runtime reported it can do; nil means nothing optional.
	RuntimeFeatures RuntimeFeatures
}

// RuntimeFeatures is what admission asks of the runtime's reported features
// (*runtimefeatures.Store).
type RuntimeFeatures interface {
	SupplementalGroupsPolicy() bool
}

// checked are the native resources whose requests must fit allocatable; extended resources
// the node advertises are checked too.
var checked = []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory, v1.ResourceEphemeralStorage}

// Admit refuses a pod when the node runs maxPods pods already, when its requests do not fit
// next to the active pods' requests, when the scheduler's predicates fail (node affinity,
// node name, host ports, NoExecute taints), or when its devices, or its NUMA-aligned CPUs,
// memory and devices (Topology), cannot be set aside.
func (a *Admitter) Admit(pod *v1.Pod, active []*v1.Pod) (bool, string, string) {
	pod, active = a.allocatedView(pod, active)
	if ok, reason, msg := a.podChecks(pod); !ok {
		return false, reason, msg
	}
	for _, check := range []func(*v1.Pod) (bool, string, string){a.Pressure, a.Shutdown} {
		if check == nil {
			continue
		}
		if ok, reason, msg := check(pod); !ok {
			return false, reason, msg
		}
	}
	if a.MaxPods > 0 && len(active) >= a.MaxPods {
		return false, "OutOfpods", fmt.Sprintf("Node didn't have enough resource: pods, requested: 1, used: %d, capacity: %d", len(active), a.MaxPods)
	}
	if ok, reason, msg := a.fits(pod, active); !ok {
		return false, reason, msg
	}
	if a.Node != nil {
		if node := a.Node(); node != nil {
			if ok, reason, msg := predicates(pod, node, active); !ok {
				return false, reason, msg
			}
		}
	}
	if a.Devices != nil {
		if err := a.Devices.Admit(pod, active); err != nil {
			return false, ReasonUnexpectedAdmissionError, "device allocation failed: " + err.Error()
		}
	}
	if a.Topology != nil {
		if ok, reason, msg := a.Topology.Admit(pod); !ok {
			return false, reason, msg
		}
	}
	return true, "", ""
}

// fits checks the pod's requests against allocatable. Device plugin resources are left to
// Devices, which knows which devices are healthy and free right now.
func (a *Admitter) fits(pod *v1.Pod, active []*v1.Pod) (bool, string, string) {
	if a.Allocatable == nil {
		return true, "", ""
	}
	alloc := a.Allocatable()
	want := Requests(pod)
	names := slices.Clone(checked)
	for _, name := range slices.Sorted(maps.Keys(want)) {
		if _, ok := alloc[name]; ok && isExtended(name) && (a.Devices == nil || !a.Devices.Manages(name)) {
			names = append(names, name)
		}
	}
	for _, name := range names {
		capacity, ok := alloc[name]
		req := want[name]
		if !ok || req.IsZero() {
			continue
		}
		used := resource.Quantity{}
		for _, p := range active {
			r := Requests(p)[name]
			used.Add(r)
		}
		free := capacity.DeepCopy()
		free.Sub(used)
		if req.Cmp(free) > 0 {
			return false, "OutOf" + string(name), fmt.Sprintf("Node didn't have enough resource: %s, requested: %d, used: %d, capacity: %d",
				name, Amount(name, req), Amount(name, used), Amount(name, capacity))
		}
	}
	return true, "", ""
}

// isExtended says whether name is an extended resource: domain-prefixed, outside kubernetes.io.
func isExtended(name v1.ResourceName) bool {
	n := string(name)
	return strings.Contains(n, "/") && !strings.Contains(n, v1.ResourceDefaultNamespacePrefix) &&
		!strings.HasPrefix(n, v1.DefaultResourceRequestsPrefix)
}

// Amount prints cpu in millicores and everything else in base units, as upstream messages do.
func Amount(name v1.ResourceName, q resource.Quantity) int64 {
	if name == v1.ResourceCPU {
		return q.MilliValue()
	}
	return q.Value()
}

// Requests returns what a pod asks for: the most its containers request at once (init
// containers run one at a time before the app containers, sidecars keep running beside
// them: sidecar.Fold), plus overhead.
func Requests(pod *v1.Pod) v1.ResourceList {
	out := sidecar.Fold(pod, func(c *v1.Container) v1.ResourceList { return c.Resources.Requests })
	for name, q := range pod.Spec.Overhead {
		sum := out[name]
		sum.Add(q)
		out[name] = sum
	}
	return out
}

// Reject records the refusal as the pod's final status, phase Failed with the reason, and
// posts it as a Warning event.
func (a *Admitter) Reject(pod *v1.Pod, reason, message string) {
	if a.Recorder != nil {
		a.Recorder.Event(pod, v1.EventTypeWarning, reason, message)
	}
	now := metav1.Now()
	a.Statuses.Set(pod, v1.PodStatus{
		Phase: v1.PodFailed, Reason: reason, Message: "Pod was rejected: " + message,
		QOSClass: qos.Class(pod), StartTime: &now,
	})
}
