package status

import (
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
)

// Syncer pushes changed statuses somewhere else (the API server in cluster mode).
type Syncer interface {
	StatusChanged(pod *v1.Pod, status v1.PodStatus)
}

// Manager holds the latest computed status of every pod nodelet runs.
type Manager struct {
	mu       sync.RWMutex
	statuses map[types.UID]v1.PodStatus
	syncer   Syncer
}

// NewManager returns an empty status manager; syncer may be nil (standalone).
func NewManager(syncer Syncer) *Manager {
	return &Manager{statuses: map[types.UID]v1.PodStatus{}, syncer: syncer}
}

// Get returns the last status set for uid.
func (m *Manager) Get(uid types.UID) (v1.PodStatus, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	st, ok := m.statuses[uid]
	return st, ok
}

// Set records a newly computed status and reports whether it differs from the last one.
// Only a change is passed on to the syncer.
func (m *Manager) Set(pod *v1.Pod, st v1.PodStatus) bool {
	m.mu.Lock()
	old, ok := m.statuses[pod.UID]
	changed := !ok || !equality.Semantic.DeepEqual(old, st)
	if changed {
		m.statuses[pod.UID] = *st.DeepCopy()
	}
	m.mu.Unlock()
	if changed && m.syncer != nil {
		m.syncer.StatusChanged(pod, st)
	}
	return changed
}

// Delete forgets a pod's status.
func (m *Manager) Delete(uid types.UID) {
	m.mu.Lock()
	delete(m.statuses, uid)
	m.mu.Unlock()
}

// Name names the status manager's per-pod state.
func (m *Manager) Name() string { return "status" }

// ReleasePod forgets the status of a pod removed for good.
func (m *Manager) ReleasePod(uid types.UID) error {
	m.Delete(uid)
	return nil
}
