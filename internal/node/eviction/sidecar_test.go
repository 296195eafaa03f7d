package eviction

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	"k8s.io/utils/ptr"
)

// Sidecars run beside the app containers: they count in the pod's request and its total
// local storage limit, as upstream's rule for pod resources says.
func TestSidecarsCountInRequestAndStorageLimit(t *testing.T) {
	list := func(name v1.ResourceName, q string) v1.ResourceList {
		return v1.ResourceList{name: resource.MustParse(q)}
	}
	pod := &v1.Pod{Spec: v1.PodSpec{
		InitContainers: []v1.Container{{Name: "proxy", RestartPolicy: ptr.To(v1.ContainerRestartPolicyAlways),
			Resources: v1.ResourceRequirements{Requests: list(v1.ResourceMemory, "100Mi"), Limits: list(v1.ResourceEphemeralStorage, "1Mi")}}},
		Containers: []v1.Container{{Name: "app",
			Resources: v1.ResourceRequirements{Requests: list(v1.ResourceMemory, "50Mi"), Limits: list(v1.ResourceEphemeralStorage, "1Mi")}}},
	}}
	if got, want := request(pod, MemoryAvailable), int64(150<<20); got != want {
		t.Errorf("memory request %d, want %d (app + sidecar)", got, want)
	}
	used := uint64(3 << 19) // 1.5Mi: over the app's limit alone, within app + sidecar
	st := &statsapi.PodStats{EphemeralStorage: &statsapi.FsStats{UsedBytes: &used}}
	if msg := podOverLimit(pod, st); msg != "" {
		t.Errorf("evicted within the pod's total limit: %s", msg)
	}
	used = 3 << 20
	if msg := podOverLimit(pod, st); !strings.Contains(msg, "2Mi") {
		t.Errorf("message %q, want the 2Mi total limit", msg)
	}
}
