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
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"

	"github.com/nodelet/nodelet/internal/lib/metrics"
	"github.com/nodelet/nodelet/internal/pod/podfields"
	"github.com/nodelet/nodelet/internal/pod/status"
	"github.com/nodelet/nodelet/internal/podspec/qos"
	"github.com/nodelet/nodelet/internal/podspec/sidecar"
	"github.com/nodelet/nodelet/internal/runtime/runtimefeatures"
)

// Devices says which resources device plugins serve (*deviceplugin.Manager): their devices are
// set aside by the topology manager's device provider, not counted against allocatable here.
type Devices interface {
	Manages(name v1.ResourceName) bool
}

// Topology aligns and sets aside the pod's CPUs, memory and devices on the machine's NUMA
// nodes, or says why it cannot (*topologymanager.Manager). Release gives back what Admit set
// aside for a pod a later check refused.
type Topology interface {
	Admit(pod *v1.Pod) (ok bool, reason, message string)
	Release(uid types.UID)
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
	// Devices, when set, names the device plugin resources fits leaves to Topology.
	Devices Devices
	// Topology, when set, runs where upstream runs its allocate-resources handler: after the
	// pressure and sysctl checks, before the resource fit and the scheduler's predicates, which
	// give back what it set aside when they refuse the pod.
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
	// StopSignals is the ContainerStopSignals feature gate: off, a pod setting a container's
	// lifecycle.stopSignal is refused.
	StopSignals bool
	// ImageVolumes is the ImageVolume feature gate: on, a pod with an image volume is refused
	// unless the runtime mounts images. Off, such a pod is admitted and waits for a volume no
	// plugin sets up, as upstream's.
	ImageVolumes bool
	// DynamicResources: the DRA manager prepares claims (the DynamicResourceAllocation
	// feature gate is on, in the daemon); otherwise a pod with ResourceClaims is refused.
	DynamicResources bool
}

// RuntimeFeatures is what admission asks of the runtime's reported features and version
// (*runtimefeatures.Store).
type RuntimeFeatures interface {
	SupplementalGroupsPolicy() bool
	// Has says whether the runtime's version has a feature CRI Status does not report.
	Has(since runtimefeatures.Since) bool
	// Lacking names the runtime the node runs and the release that has the feature.
	Lacking(since runtimefeatures.Since) string
	// ImageVolumes says whether the runtime mounts image volumes; ImageVolumesRefusal says
	// why not, naming the runtime and the versions that can.
	ImageVolumes() bool
	ImageVolumesRefusal() string
}

// checked are the native resources whose requests must fit allocatable; extended resources
// the node advertises are checked too.
var checked = []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory, v1.ResourceEphemeralStorage}

// Admit runs the checks in the upstream kubelet's admit handler order: node pressure,
// sysctls, the NUMA-aligned allocation of CPUs, memory and devices (Topology), then the
// predicates (OS, supplementalGroupsPolicy, maxPods, requests against allocatable, node
// affinity, node name, host ports, NoExecute taints), AppArmor and node shutdown. So a
// Guaranteed pod no NUMA node can hold gets the resource managers' refusal rather than
// OutOfmemory; and what they set aside is given back when a later check refuses the pod.
// Spec fields nodelet does not honour are refused before anything else.
func (a *Admitter) Admit(pod *v1.Pod, active []*v1.Pod) (bool, string, string) {
	pod, active = a.allocatedView(pod, active)
	if ok, reason, msg := a.beforeAllocation(pod); !ok {
		return false, reason, msg
	}
	if a.Topology == nil {
		return a.afterAllocation(pod, active)
	}
	if ok, reason, msg := a.Topology.Admit(pod); !ok {
		return false, reason, msg
	}
	ok, reason, msg := a.afterAllocation(pod, active)
	if !ok {
		a.Topology.Release(pod.UID)
	}
	return ok, reason, msg
}

// beforeAllocation is what upstream checks before its resource managers allocate: node
// pressure and sysctls (and nodelet's refused spec fields).
func (a *Admitter) beforeAllocation(pod *v1.Pod) (bool, string, string) {
	if field, why := podfields.Check(&pod.Spec); field != "" {
		return false, podfields.Reason, field + ": " + why
	}
	if ok, reason, msg := a.checkStopSignal(pod); !ok {
		return false, reason, msg
	}
	if ok, reason, msg := a.checkClaims(pod); !ok {
		return false, reason, msg
	}
	if ok, reason, msg := a.checkImageVolumes(pod); !ok {
		return false, reason, msg
	}
	if a.Pressure != nil {
		if ok, reason, msg := a.Pressure(pod); !ok {
			return false, reason, msg
		}
	}
	return checkSysctls(pod, a.AllowedUnsafeSysctls)
}

// afterAllocation is upstream's predicate handler, then its AppArmor and shutdown handlers.
func (a *Admitter) afterAllocation(pod *v1.Pod, active []*v1.Pod) (bool, string, string) {
	if ok, reason, msg := checkOS(pod); !ok {
		return false, reason, msg
	}
	if ok, reason, msg := checkSupplementalGroupsPolicy(pod, a.RuntimeFeatures); !ok {
		return false, reason, msg
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
	if ok, reason, msg := a.checkAppArmor(pod); !ok {
		return false, reason, msg
	}
	if a.Shutdown != nil {
		return a.Shutdown(pod)
	}
	return true, "", ""
}

// fits is Fit's check with the Admitter's allocatable and devices.
func (a *Admitter) fits(pod *v1.Pod, active []*v1.Pod) (bool, string, string) {
	return Fit{Allocatable: a.Allocatable, Devices: a.Devices}.Fits(pod, active)
}

// Fit is the resource part of admission alone, which in-place resizes check too: it needs
// neither the active pods' source nor the node's pressure or shutdown, so the resizer is given
// it at construction, before the parts admission reads are made.
type Fit struct {
	// Allocatable returns the node's allocatable resources; nil or empty skips the check.
	Allocatable func() v1.ResourceList
	// Devices, when set, names the device plugin resources left to the topology manager.
	Devices Devices
}

// Fits checks pod's requests beside active's against allocatable: cpu, memory, ephemeral
// storage, huge pages and the extended resources the node advertises. Device plugin resources
// are left to Devices, which knows which devices are healthy and free right now. A refusal's
// message is upstream's "Node didn't have enough resource: ...".
func (f Fit) Fits(pod *v1.Pod, active []*v1.Pod) (bool, string, string) {
	if f.Allocatable == nil {
		return true, "", ""
	}
	alloc := f.Allocatable()
	want := Requests(pod)
	names := slices.Clone(checked)
	for _, name := range slices.Sorted(maps.Keys(want)) {
		_, advertised := alloc[name]
		if isHugePages(name) || advertised && isExtended(name) && (f.Devices == nil || !f.Devices.Manages(name)) {
			names = append(names, name)
		}
	}
	for _, name := range names {
		// A huge page size the node does not report has none to give, as upstream counts it.
		capacity, ok := alloc[name]
		req := want[name]
		if !ok && !isHugePages(name) || req.IsZero() {
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

// isHugePages says whether name is a huge page size (hugepages-2Mi): checked against
// allocatable like the native resources.
func isHugePages(name v1.ResourceName) bool {
	return strings.HasPrefix(string(name), v1.ResourceHugePagesPrefix)
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
	metrics.AdmissionRejected(reason)
	if a.Recorder != nil {
		a.Recorder.Event(pod, v1.EventTypeWarning, reason, message)
	}
	now := metav1.Now()
	a.Statuses.Set(pod, v1.PodStatus{
		Phase: v1.PodFailed, Reason: reason, Message: "Pod was rejected: " + message,
		QOSClass: qos.Class(pod), StartTime: &now,
	})
}
