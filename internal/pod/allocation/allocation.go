// Package allocation keeps, per pod, the resources nodelet has allocated to its resizable
// containers (what admission accepted: a resize waiting for room does not change it) and the
// resources actuated on its running containers. Both are checkpointed in the root directory, in
// upstream's files and format, so that after a restart a resize is neither applied again nor
// forgotten.
package allocation

import (
	"fmt"
	"path/filepath"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodelet/nodelet/internal/podspec/sidecar"
)

// The checkpoint files in the root directory, named as upstream names them.
const (
	AllocatedFile = "allocated_pods_state"
	ActuatedFile  = "actuated_pods_state"
)

// Manager owns the allocated and actuated resources of every pod.
type Manager interface {
	// AllocatedPod returns pod with its resizable containers' resources replaced by the
	// allocated ones (pod itself when they are the same), and whether an allocation exists.
	AllocatedPod(pod *v1.Pod) (*v1.Pod, bool)
	// SetAllocated records pod's resizable containers' resources as allocated.
	SetAllocated(pod *v1.Pod) error
	// Actuated returns the resources last set on the pod's named container.
	Actuated(uid types.UID, container string) (v1.ResourceRequirements, bool)
	// SetActuated records the resources just set on the pod's named container.
	SetActuated(uid types.UID, container string, r v1.ResourceRequirements) error
	// RemovePod forgets a pod for good.
	RemovePod(uid types.UID) error
	// RemoveOrphans forgets every pod keep does not want.
	RemoveOrphans(keep func(types.UID) bool) error
}

// New loads the checkpoints in dir (the root directory). A corrupt checkpoint is an error:
// nodelet cannot tell then what its pods' containers were given.
func New(dir string) (Manager, error) {
	allocated, err := openStore(filepath.Join(dir, AllocatedFile))
	if err != nil {
		return nil, err
	}
	actuated, err := openStore(filepath.Join(dir, ActuatedFile))
	if err != nil {
		return nil, err
	}
	return &manager{allocated: allocated, actuated: actuated}, nil
}

type manager struct {
	allocated, actuated *store
}

func (m *manager) AllocatedPod(pod *v1.Pod) (*v1.Pod, bool) {
	alloc, ok := m.allocated.pod(pod.UID)
	if !ok {
		return pod, false
	}
	if !alloc.differs(pod.Spec.Containers) && !alloc.differs(pod.Spec.InitContainers) {
		return pod, true
	}
	out := pod.DeepCopy()
	alloc.applyTo(out.Spec.Containers)
	alloc.applyTo(out.Spec.InitContainers)
	return out, true
}

func (m *manager) SetAllocated(pod *v1.Pod) error {
	return m.allocated.setPod(pod.UID, resizable(pod))
}

func (m *manager) Actuated(uid types.UID, container string) (v1.ResourceRequirements, bool) {
	p, ok := m.actuated.pod(uid)
	if !ok {
		return v1.ResourceRequirements{}, false
	}
	r, ok := p.ContainerResources[container]
	return r, ok
}

func (m *manager) SetActuated(uid types.UID, container string, r v1.ResourceRequirements) error {
	return m.actuated.setContainer(uid, container, r)
}

func (m *manager) RemovePod(uid types.UID) error {
	keep := func(u types.UID) bool { return u != uid }
	return m.RemoveOrphans(keep)
}

func (m *manager) RemoveOrphans(keep func(types.UID) bool) error {
	err := m.allocated.prune(keep)
	if err2 := m.actuated.prune(keep); err == nil {
		err = err2
	}
	return err
}

// resizable returns the resources of pod's containers that can be resized: the app
// containers and the sidecars (restartable init containers).
func resizable(pod *v1.Pod) podResources {
	out := podResources{ContainerResources: map[string]v1.ResourceRequirements{}}
	for _, c := range sidecar.LongRunning(pod) {
		out.ContainerResources[c.Name] = *c.Resources.DeepCopy()
	}
	return out
}

// differs says whether any of list has resources other than those recorded for it.
func (p podResources) differs(list []v1.Container) bool {
	for i := range list {
		if r, ok := p.ContainerResources[list[i].Name]; ok && !equality.Semantic.DeepEqual(list[i].Resources, r) {
			return true
		}
	}
	return false
}

// applyTo gives the containers of list that have a record their recorded resources.
func (p podResources) applyTo(list []v1.Container) {
	for i := range list {
		if r, ok := p.ContainerResources[list[i].Name]; ok {
			list[i].Resources = *r.DeepCopy()
		}
	}
}

// store is one checkpoint file and its content in memory. Every change is written through.
type store struct {
	path string
	mu   sync.RWMutex
	pods entries
}

func openStore(path string) (*store, error) {
	e, err := readCheckpoint(path)
	if err != nil {
		return nil, err
	}
	return &store{path: path, pods: e}, nil
}

func (s *store) pod(uid types.UID) (podResources, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	p, ok := s.pods[uid]
	return p, ok
}

func (s *store) setPod(uid types.UID, p podResources) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, ok := s.pods[uid]; ok && equality.Semantic.DeepEqual(old, p) {
		return nil
	}
	s.pods[uid] = p
	return s.write()
}

func (s *store) setContainer(uid types.UID, name string, r v1.ResourceRequirements) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.pods[uid]
	if old, found := p.ContainerResources[name]; found && equality.Semantic.DeepEqual(old, r) {
		return nil
	}
	if !ok || p.ContainerResources == nil {
		p = podResources{ContainerResources: map[string]v1.ResourceRequirements{}}
	}
	p.ContainerResources[name] = *r.DeepCopy()
	s.pods[uid] = p
	return s.write()
}

func (s *store) prune(keep func(types.UID) bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	removed := false
	for uid := range s.pods {
		if !keep(uid) {
			delete(s.pods, uid)
			removed = true
		}
	}
	if !removed {
		return nil
	}
	return s.write()
}

// write saves the store; the caller holds mu.
func (s *store) write() error {
	if err := writeCheckpoint(s.path, s.pods); err != nil {
		return fmt.Errorf("checkpoint pod resources: %w", err)
	}
	return nil
}
