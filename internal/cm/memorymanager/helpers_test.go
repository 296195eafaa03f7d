package memorymanager

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"

	"github.com/nodelet/nodelet/internal/host/topology"
)

const gi = uint64(1) << 30

// newStatic starts a Static memory manager in a fresh directory on a synthetic machine of
// numaNodes nodes with memPerNode bytes each, reserving reservedPerNode on every node.
func newStatic(t *testing.T, numaNodes int, memPerNode, reservedPerNode uint64) (*Manager, Options) {
	t.Helper()
	opts := staticOptions(t.TempDir(), numaNodes, memPerNode, reservedPerNode)
	m, err := New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return m, opts
}

func staticOptions(dir string, numaNodes int, memPerNode, reservedPerNode uint64) Options {
	machine := topology.Synthetic(1, numaNodes, 2, 2, memPerNode)
	var reserved []kubeletconfigv1beta1.MemoryReservation
	for id := range numaNodes {
		reserved = append(reserved, kubeletconfigv1beta1.MemoryReservation{
			NumaNode: int32(id),
			Limits:   v1.ResourceList{v1.ResourceMemory: *resource.NewQuantity(int64(reservedPerNode), resource.BinarySI)},
		})
	}
	total := resource.NewQuantity(int64(reservedPerNode)*int64(numaNodes), resource.BinarySI)
	return Options{
		Policy: PolicyStatic, Nodes: NodesOf(machine), Reserved: reserved,
		NodeReservation: v1.ResourceList{v1.ResourceMemory: *total}, StateDir: dir,
	}
}

// container is a container requesting (and limited to) memory bytes and 1 CPU, or only
// requesting memory when burstable.
func container(name string, memory uint64, burstable bool) v1.Container {
	q := *resource.NewQuantity(int64(memory), resource.BinarySI)
	res := v1.ResourceList{v1.ResourceMemory: q, v1.ResourceCPU: resource.MustParse("1")}
	c := v1.Container{Name: name, Resources: v1.ResourceRequirements{Requests: res}}
	if !burstable {
		c.Resources.Limits = res.DeepCopy()
	}
	return c
}

func guaranteedPod(uid string, containers ...v1.Container) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: uid, Namespace: "default", UID: types.UID(uid)},
		Spec:       v1.PodSpec{Containers: containers},
	}
}

// admit allocates every container of pod (init containers first) with no affinity.
func admit(t *testing.T, m *Manager, pod *v1.Pod) error {
	t.Helper()
	for _, list := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			if err := m.Allocate(pod, &list[i], topology.Hint{}); err != nil {
				return err
			}
		}
	}
	return nil
}

// free returns the free memory of each node.
func free(m *Manager) map[int]uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[int]uint64{}
	for id, n := range m.static.machine {
		out[id] = n.MemoryMap[v1.ResourceMemory].Free
	}
	return out
}

func mems(m *Manager, pod *v1.Pod, name string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return nodeList(m.static.entries.get(string(pod.UID), name))
}
