// Package pod keeps the set of pods nodelet should run, as the sources last described them.
package pod

import (
	"sort"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Manager is the desired-pod store. It is safe for concurrent use; the sync loop writes it
// and everyone else reads it.
type Manager struct {
	mu    sync.RWMutex
	byUID map[types.UID]*v1.Pod
	// mirrors are the API's copies of static pods, by full name; they are never run.
	mirrors map[string]*v1.Pod
	// changed hears every Set and Remove (old or new pod nil when there is none).
	changed []func(old, updated *v1.Pod)
}

// OnChange registers f to hear every change of the desired pods (e.g. to track the objects
// they reference). Register before the first Set.
func (m *Manager) OnChange(f func(old, updated *v1.Pod)) {
	m.mu.Lock()
	m.changed = append(m.changed, f)
	m.mu.Unlock()
}

// NewManager returns an empty pod manager.
func NewManager() *Manager {
	return &Manager{byUID: map[types.UID]*v1.Pod{}, mirrors: map[string]*v1.Pod{}}
}

// Set adds or replaces a pod.
func (m *Manager) Set(pod *v1.Pod) {
	m.mu.Lock()
	old := m.byUID[pod.UID]
	m.byUID[pod.UID] = pod
	hooks := m.changed
	m.mu.Unlock()
	for _, f := range hooks {
		f(old, pod)
	}
}

// Remove forgets a pod.
func (m *Manager) Remove(uid types.UID) {
	m.mu.Lock()
	old, ok := m.byUID[uid]
	delete(m.byUID, uid)
	hooks := m.changed
	m.mu.Unlock()
	if !ok {
		return
	}
	for _, f := range hooks {
		f(old, nil)
	}
}

// Get returns the desired pod with this UID.
func (m *Manager) Get(uid types.UID) (*v1.Pod, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	p, ok := m.byUID[uid]
	return p, ok
}

// GetByName returns the desired pod with this namespace and name.
func (m *Manager) GetByName(namespace, name string) (*v1.Pod, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	for _, p := range m.byUID {
		if p.Namespace == namespace && p.Name == name {
			return p, true
		}
	}
	return nil, false
}

// Pods returns every desired pod, ordered by namespace and name.
func (m *Manager) Pods() []*v1.Pod {
	m.mu.RLock()
	out := make([]*v1.Pod, 0, len(m.byUID))
	for _, p := range m.byUID {
		out = append(out, p)
	}
	m.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool {
		if out[i].Namespace != out[j].Namespace {
			return out[i].Namespace < out[j].Namespace
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// SetMirror records the mirror pod the API holds for a static pod.
func (m *Manager) SetMirror(mirror *v1.Pod) {
	m.mu.Lock()
	m.mirrors[FullName(mirror)] = mirror
	m.mu.Unlock()
}

// RemoveMirror forgets a mirror pod, unless a newer one (another UID) replaced it.
func (m *Manager) RemoveMirror(mirror *v1.Pod) {
	m.mu.Lock()
	if cur, ok := m.mirrors[FullName(mirror)]; ok && cur.UID == mirror.UID {
		delete(m.mirrors, FullName(mirror))
	}
	m.mu.Unlock()
}

// MirrorOf returns the mirror pod of a static pod.
func (m *Manager) MirrorOf(static *v1.Pod) (*v1.Pod, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	p, ok := m.mirrors[FullName(static)]
	return p, ok
}

// Mirrors returns every mirror pod known.
func (m *Manager) Mirrors() []*v1.Pod {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]*v1.Pod, 0, len(m.mirrors))
	for _, p := range m.mirrors {
		out = append(out, p)
	}
	return out
}
