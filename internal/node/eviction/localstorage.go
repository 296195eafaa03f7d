package eviction

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/nodelet/nodelet/internal/podspec/sidecar"
)

// localStorageSignal labels local storage evictions in kubelet_evictions, as upstream does.
const localStorageSignal = "ephemeralcontainerfs.limit"

// evictOverLimits evicts, whatever the node's state, every pod whose disk emptyDir passed its
// sizeLimit, whose container passed its ephemeral-storage limit, or whose total passed the
// sum of its containers' limits. It returns the pods it evicted.
func (m *Manager) evictOverLimits(cands []candidate) []*v1.Pod {
	var evicted []*v1.Pod
	for _, c := range cands {
		if c.stats == nil || (m.deps.Critical != nil && m.deps.Critical(c.pod)) {
			continue
		}
		if msg := overLimit(c.pod, c.stats); msg != "" {
			m.evict(c.pod, 0, Eviction{Message: msg}, localStorageSignal)
			evicted = append(evicted, c.pod)
		}
	}
	return evicted
}

// overLimit is the eviction message of the first local storage limit the pod passed, or "".
func overLimit(pod *v1.Pod, st *statsapi.PodStats) string {
	if msg := emptyDirOverLimit(pod, st); msg != "" {
		return msg
	}
	if msg := containerOverLimit(pod, st); msg != "" {
		return msg
	}
	return podOverLimit(pod, st)
}

func emptyDirOverLimit(pod *v1.Pod, st *statsapi.PodStats) string {
	used := map[string]uint64{}
	for _, vs := range st.VolumeStats {
		if vs.UsedBytes != nil {
			used[vs.Name] = *vs.UsedBytes
		}
	}
	for _, vol := range pod.Spec.Volumes {
		ed := vol.EmptyDir
		if ed == nil || ed.SizeLimit == nil || ed.Medium == v1.StorageMediumMemory {
			continue // memory-backed emptyDirs count against the pod's memory instead
		}
		if u, ok := used[vol.Name]; ok && int64(u) > ed.SizeLimit.Value() {
			return fmt.Sprintf("Usage of EmptyDir volume %q exceeds the limit %q. ", vol.Name, ed.SizeLimit.String())
		}
	}
	return ""
}

func containerOverLimit(pod *v1.Pod, st *statsapi.PodStats) string {
	for _, cs := range st.Containers {
		limit, ok := containerLimit(pod, cs.Name)
		if !ok {
			continue
		}
		if used := containerUsage(cs, NodeFsAvailable); used > limit.Value() {
			return fmt.Sprintf("Container %s exceeded its local ephemeral storage limit %q. ", cs.Name, limit.String())
		}
	}
	return ""
}

func containerLimit(pod *v1.Pod, name string) (resource.Quantity, bool) {
	for _, c := range pod.Spec.Containers {
		if c.Name == name {
			q, ok := c.Resources.Limits[v1.ResourceEphemeralStorage]
			return q, ok
		}
	}
	return resource.Quantity{}, false
}

// podOverLimit compares the pod's whole local usage with what its containers' limits allow at
// once (sidecar.Fold), when it has such limits.
func podOverLimit(pod *v1.Pod, st *statsapi.PodStats) string {
	total, limited := sidecar.Fold(pod, func(c *v1.Container) v1.ResourceList {
		if q, ok := c.Resources.Limits[v1.ResourceEphemeralStorage]; ok {
			return v1.ResourceList{v1.ResourceEphemeralStorage: q}
		}
		return nil
	})[v1.ResourceEphemeralStorage]
	if !limited || st.EphemeralStorage == nil || st.EphemeralStorage.UsedBytes == nil {
		return ""
	}
	if int64(*st.EphemeralStorage.UsedBytes) > total.Value() {
		return fmt.Sprintf("Pod ephemeral local storage usage exceeds the total limit of containers %s. ", total.String())
	}
	return ""
}
