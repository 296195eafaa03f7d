package cpumanager

import (
	"context"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/cpuset"

	"github.com/nodelet/nodelet/internal/cm/cmpolicy"
	"github.com/nodelet/nodelet/internal/host/topology"
)

// node is a hand-written fake of what the manager reads and calls: the active pods, their
// statuses, and the runtime's cpuset updates.
type node struct {
	mu       sync.Mutex
	pods     []*v1.Pod
	statuses map[types.UID]v1.PodStatus
	updates  map[string]string // container ID → last cpuset set
	calls    int
	fail     error
}

func newNode() *node {
	return &node{statuses: map[types.UID]v1.PodStatus{}, updates: map[string]string{}}
}

func (n *node) active() []*v1.Pod {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]*v1.Pod(nil), n.pods...)
}

func (n *node) status(uid types.UID) (v1.PodStatus, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	s, ok := n.statuses[uid]
	return s, ok
}

func (n *node) setCPUs(_ context.Context, id string, cpus cpuset.CPUSet) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.calls++
	if n.fail != nil {
		return n.fail
	}
	n.updates[id] = cpus.String()
	return nil
}

// run adds pod as running, each container with ID "<pod name>-<container name>".
func (n *node) run(pod *v1.Pod) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.pods = append(n.pods, pod)
	st := v1.PodStatus{}
	for _, c := range pod.Spec.Containers {
		st.ContainerStatuses = append(st.ContainerStatuses, v1.ContainerStatus{
			Name: c.Name, ContainerID: "containerd://" + pod.Name + "-" + c.Name,
			State: v1.ContainerState{Running: &v1.ContainerStateRunning{}},
		})
	}
	n.statuses[pod.UID] = st
}

func (n *node) remove(uid types.UID) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for i, p := range n.pods {
		if p.UID == uid {
			n.pods = append(n.pods[:i], n.pods[i+1:]...)
			break
		}
	}
	delete(n.statuses, uid)
}

// newManager builds a manager over m with the state in a fresh directory.
func newManager(t *testing.T, m *topology.Machine, policy string, reserved int, options map[string]string) (*Manager, *node, string) {
	t.Helper()
	dir := t.TempDir()
	mgr, fake := newManagerIn(t, dir, m, policy, reserved, options)
	return mgr, fake, dir
}

func newManagerIn(t *testing.T, dir string, m *topology.Machine, policy string, reserved int, options map[string]string) (*Manager, *node) {
	t.Helper()
	fake := newNode()
	mgr, err := New(managerOptions(dir, m, policy, reserved, options, fake))
	if err != nil {
		t.Fatal(err)
	}
	return mgr, fake
}

func managerOptions(dir string, m *topology.Machine, policy string, reserved int, options map[string]string, fake *node) Options {
	return Options{
		Policy: policy, PolicyOptions: options, OptionGates: cmpolicy.DefaultCPUOptionGates, Machine: m, NumReserved: reserved, StateDir: dir,
		ActivePods: fake.active, PodStatus: fake.status, SetContainerCPUs: fake.setCPUs,
	}
}

// pod makes a pod whose containers request cpu each (limits equal: Guaranteed when cpu is
// set); an empty cpu makes a BestEffort container.
func pod(name, cpu string, containers ...string) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(name + "-uid")}}
	for _, c := range containers {
		p.Spec.Containers = append(p.Spec.Containers, container(c, cpu))
	}
	return p
}

func container(name, cpu string) v1.Container {
	c := v1.Container{Name: name}
	if cpu != "" {
		rl := v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse("64Mi")}
		c.Resources = v1.ResourceRequirements{Requests: rl, Limits: rl}
	}
	return c
}

func resourceQty(s string) resource.Quantity { return resource.MustParse(s) }

func typesUID(s string) types.UID { return types.UID(s) }
