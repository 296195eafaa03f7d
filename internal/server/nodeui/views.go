package nodeui

import (
	"slices"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// nodeView is the node summary the page shows (api/node).
type nodeView struct {
	Name       string          `json:"name"`
	Mode       string          `json:"mode"`  // standalone or cluster
	Known      bool            `json:"known"` // false before a cluster-mode node registered
	Version    string          `json:"version"`
	Kubelet    string          `json:"kubeletVersion,omitempty"`
	Runtime    string          `json:"runtime,omitempty"`
	OS         string          `json:"os,omitempty"`
	Kernel     string          `json:"kernel,omitempty"`
	Arch       string          `json:"arch,omitempty"`
	Addresses  []string        `json:"addresses"`
	Resources  []resourceView  `json:"resources"`
	Conditions []conditionView `json:"conditions"`
	Topology   *topologyView   `json:"topology,omitempty"` // nil when the machine was not read
	Now        time.Time       `json:"now"`
}

// resourceView is one resource's capacity and allocatable, as text and as a number (millicores
// for cpu, plain units otherwise) for the page to scale its graphs by.
type resourceView struct {
	Name             string `json:"name"`
	Capacity         string `json:"capacity"`
	Allocatable      string `json:"allocatable"`
	CapacityValue    int64  `json:"capacityValue"`
	AllocatableValue int64  `json:"allocatableValue"`
}

type conditionView struct {
	Type    string    `json:"type"`
	Status  string    `json:"status"`
	Reason  string    `json:"reason,omitempty"`
	Message string    `json:"message,omitempty"`
	Since   time.Time `json:"since"`
}

func newNodeView(n *v1.Node) nodeView {
	out := nodeView{Name: n.Name, Known: true, Addresses: []string{}, Resources: []resourceView{}, Conditions: []conditionView{}}
	info := n.Status.NodeInfo
	out.Kubelet, out.Runtime = info.KubeletVersion, info.ContainerRuntimeVersion
	out.OS, out.Kernel, out.Arch = info.OSImage, info.KernelVersion, info.Architecture
	for _, a := range n.Status.Addresses {
		out.Addresses = append(out.Addresses, string(a.Type)+": "+a.Address)
	}
	for name, c := range n.Status.Capacity {
		a := n.Status.Allocatable[name]
		out.Resources = append(out.Resources, resourceView{
			Name: string(name), Capacity: c.String(), Allocatable: a.String(),
			CapacityValue: quantityValue(name, c), AllocatableValue: quantityValue(name, a),
		})
	}
	slices.SortFunc(out.Resources, func(a, b resourceView) int { return strings.Compare(a.Name, b.Name) })
	for _, c := range n.Status.Conditions {
		out.Conditions = append(out.Conditions, conditionView{
			Type: string(c.Type), Status: string(c.Status), Reason: c.Reason, Message: c.Message, Since: c.LastTransitionTime.Time,
		})
	}
	return out
}

func quantityValue(name v1.ResourceName, q resource.Quantity) int64 {
	if name == v1.ResourceCPU {
		return q.MilliValue()
	}
	return q.Value()
}

// podView is one pod as the page lists it (api/pods).
type podView struct {
	Namespace  string          `json:"namespace"`
	Name       string          `json:"name"`
	UID        string          `json:"uid"`
	Phase      string          `json:"phase"`
	Status     string          `json:"status"` // what kubectl's STATUS column would say
	Ready      bool            `json:"ready"`  // the pod's Ready condition
	ReadyCount string          `json:"readyContainers"`
	Restarts   int32           `json:"restarts"`
	IP         string          `json:"ip,omitempty"`
	QOS        string          `json:"qosClass,omitempty"`
	Started    *time.Time      `json:"started,omitempty"`
	Deleting   bool            `json:"deleting,omitempty"`
	Containers []containerView `json:"containers"`
	Conditions []conditionView `json:"conditions"`
}

type containerView struct {
	Name     string `json:"name"`
	Init     bool   `json:"init,omitempty"`
	State    string `json:"state"` // waiting, running, terminated, or unknown before the first status
	Reason   string `json:"reason,omitempty"`
	Message  string `json:"message,omitempty"`
	ExitCode *int32 `json:"exitCode,omitempty"`
	Ready    bool   `json:"ready"`
	Restarts int32  `json:"restarts"`
}

func newPodView(p *v1.Pod) podView {
	st := p.Status
	out := podView{
		Namespace: p.Namespace, Name: p.Name, UID: string(p.UID), Phase: string(st.Phase), IP: st.PodIP,
		QOS: string(st.QOSClass), Deleting: p.DeletionTimestamp != nil,
		Containers: []containerView{}, Conditions: []conditionView{},
	}
	if st.StartTime != nil {
		out.Started = &st.StartTime.Time
	}
	for _, c := range st.Conditions {
		out.Conditions = append(out.Conditions, conditionView{
			Type: string(c.Type), Status: string(c.Status), Reason: c.Reason, Message: c.Message, Since: c.LastTransitionTime.Time,
		})
		if c.Type == v1.PodReady {
			out.Ready = c.Status == v1.ConditionTrue
		}
	}
	ready := 0
	for _, cs := range st.InitContainerStatuses {
		out.Containers = append(out.Containers, newContainerView(cs, true))
	}
	for _, cs := range st.ContainerStatuses {
		out.Containers = append(out.Containers, newContainerView(cs, false))
		out.Restarts += cs.RestartCount
		if cs.Ready {
			ready++
		}
	}
	out.ReadyCount = strconv.Itoa(ready) + "/" + strconv.Itoa(len(p.Spec.Containers))
	out.Status = podStatusText(p)
	return out
}

func newContainerView(cs v1.ContainerStatus, init bool) containerView {
	out := containerView{Name: cs.Name, Init: init, Ready: cs.Ready, Restarts: cs.RestartCount, State: "unknown"}
	switch s := cs.State; {
	case s.Waiting != nil:
		out.State, out.Reason, out.Message = "waiting", s.Waiting.Reason, s.Waiting.Message
	case s.Running != nil:
		out.State = "running"
	case s.Terminated != nil:
		out.State, out.Reason, out.Message = "terminated", s.Terminated.Reason, s.Terminated.Message
		out.ExitCode = &s.Terminated.ExitCode
	}
	return out
}

// podStatusText is the one word a person looks for: the pod's own reason (Evicted), a
// container's waiting or terminated reason (CrashLoopBackOff, Error), Terminating, else the
// phase.
func podStatusText(p *v1.Pod) string {
	if p.DeletionTimestamp != nil {
		return "Terminating"
	}
	if p.Status.Reason != "" {
		return p.Status.Reason
	}
	for _, list := range [][]v1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses} {
		for _, cs := range list {
			switch s := cs.State; {
			case s.Waiting != nil && s.Waiting.Reason != "" && s.Waiting.Reason != "PodInitializing":
				return s.Waiting.Reason
			case s.Terminated != nil && s.Terminated.Reason != "" && s.Terminated.ExitCode != 0:
				return s.Terminated.Reason
			}
		}
	}
	if p.Status.Phase == "" {
		return "Pending"
	}
	return string(p.Status.Phase)
}
