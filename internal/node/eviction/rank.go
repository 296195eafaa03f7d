package eviction

import (
	"fmt"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/nodelet/nodelet/internal/podspec/sidecar"
)

// candidate is an active pod with its stats, as ranking sees it.
type candidate struct {
	pod   *v1.Pod
	stats *statsapi.PodStats // nil when the summary has none
}

// usage is what a pod uses of the resource a signal measures.
func usage(c candidate, s Signal) int64 {
	st := c.stats
	if st == nil {
		return 0
	}
	switch s {
	case MemoryAvailable, AllocatableMemoryAvailable:
		if st.Memory != nil && st.Memory.WorkingSetBytes != nil {
			return int64(*st.Memory.WorkingSetBytes)
		}
	case PIDAvailable:
		if st.ProcessStats != nil && st.ProcessStats.ProcessCount != nil {
			return int64(*st.ProcessStats.ProcessCount)
		}
	case NodeFsInodesFree, ImageFsInodesFree:
		if st.EphemeralStorage != nil && st.EphemeralStorage.InodesUsed != nil {
			return int64(*st.EphemeralStorage.InodesUsed)
		}
	default:
		if st.EphemeralStorage != nil && st.EphemeralStorage.UsedBytes != nil {
			return int64(*st.EphemeralStorage.UsedBytes)
		}
	}
	return 0
}

// request is the pod's request of the signal's resource (0 for pids and inodes).
func request(pod *v1.Pod, s Signal) int64 {
	var name v1.ResourceName
	switch s {
	case MemoryAvailable, AllocatableMemoryAvailable:
		name = v1.ResourceMemory
	case NodeFsAvailable, ImageFsAvailable:
		name = v1.ResourceEphemeralStorage
	default:
		return 0
	}
	q := sidecar.Fold(pod, func(c *v1.Container) v1.ResourceList { return c.Resources.Requests })[name]
	return q.Value()
}

func priority(pod *v1.Pod) int32 {
	if pod.Spec.Priority != nil {
		return *pod.Spec.Priority
	}
	return 0
}

// rank orders candidates for the signal, first to evict first: pods using more than they
// request, then lower priority, then (for memory and disk) the most usage above the request;
// for pids, lower priority then the most processes.
func rank(cands []candidate, s Signal) {
	sort.SliceStable(cands, func(i, j int) bool {
		a, b := cands[i], cands[j]
		if s != PIDAvailable {
			ea, eb := usage(a, s) > request(a.pod, s), usage(b, s) > request(b.pod, s)
			if ea != eb {
				return ea
			}
		}
		if pa, pb := priority(a.pod), priority(b.pod); pa != pb {
			return pa < pb
		}
		return usage(a, s)-request(a.pod, s) > usage(b, s)-request(b.pod, s)
	})
}

// Keys of the Evicted event's annotations, as upstream names them: the resource the node
// was short of and, for memory and disk, the containers using more than they requested.
const (
	StarvedResourceKey          = "starved_resource"
	OffendingContainersKey      = "offending_containers"
	OffendingContainersUsageKey = "offending_containers_usage"
)

// message is the pod's eviction message in upstream's shape: the signal, threshold and
// what was available, then each container using more of the resource than it requested.
// The annotations name the same facts for the Evicted event.
func message(s Signal, t Threshold, o observation, c candidate) (string, map[string]string) {
	res := resourceOf(s)
	annotations := map[string]string{StarvedResourceKey: res}
	var b strings.Builder
	fmt.Fprintf(&b, "The node was low on resource: %s. Threshold quantity: %s, available: %s. ",
		res, quantity(t.Value.amount(o.capacity), s), quantity(o.available, s))
	if c.stats == nil || (!isMemory(s) && s != NodeFsAvailable && s != ImageFsAvailable) {
		return b.String(), annotations
	}
	var offenders, usages []string
	for _, cs := range c.stats.Containers {
		used := containerUsage(cs, s)
		req := containerRequest(c.pod, cs.Name, s)
		if used > req {
			fmt.Fprintf(&b, "Container %s was using %s, request is %s, has larger consumption of %s. ",
				cs.Name, quantity(used, s), quantity(req, s), res)
			offenders = append(offenders, cs.Name)
			usages = append(usages, quantity(used, s))
		}
	}
	annotations[OffendingContainersKey] = strings.Join(offenders, ",")
	annotations[OffendingContainersUsageKey] = strings.Join(usages, ",")
	return b.String(), annotations
}

func containerUsage(cs statsapi.ContainerStats, s Signal) int64 {
	if isMemory(s) {
		if cs.Memory != nil && cs.Memory.WorkingSetBytes != nil {
			return int64(*cs.Memory.WorkingSetBytes)
		}
		return 0
	}
	var total int64
	for _, fs := range []*statsapi.FsStats{cs.Rootfs, cs.Logs} {
		if fs != nil && fs.UsedBytes != nil {
			total += int64(*fs.UsedBytes)
		}
	}
	return total
}

func containerRequest(pod *v1.Pod, name string, s Signal) int64 {
	res := v1.ResourceMemory
	if !isMemory(s) {
		res = v1.ResourceEphemeralStorage
	}
	for _, c := range pod.Spec.Containers {
		if c.Name == name {
			q := c.Resources.Requests[res]
			return q.Value()
		}
	}
	return 0
}

// quantity prints an amount as Kubernetes prints quantities: bytes in binary units.
func quantity(n int64, s Signal) string {
	if s == PIDAvailable || s == NodeFsInodesFree || s == ImageFsInodesFree {
		return resource.NewQuantity(n, resource.DecimalSI).String()
	}
	return resource.NewQuantity(n, resource.BinarySI).String()
}
