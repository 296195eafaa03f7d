package prober

import (
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodelet/nodelet/internal/podspec/podutil"
)

// Results holds the probe workers' last results, by container instance. It is made before
// both the runtime and the Manager: the runtime asks it whether a container has started (a
// sidecar's startup probe gates the containers after it), and the Manager, which kills
// containers through the runtime, writes it (Deps.Results). As upstream's results managers,
// it has no tie to either.
type Results struct {
	mu      sync.Mutex
	results map[workerKey]probeResult
	// wakers wake each key's worker: a result asked for a container instance the worker has
	// not probed yet has it probe now rather than at its next period.
	wakers map[workerKey]func()
}

// NewResults returns an empty store: no container with a startup or readiness probe has
// passed it.
func NewResults() *Results {
	return &Results{results: map[workerKey]probeResult{}, wakers: map[workerKey]func(){}}
}

// Ready reports whether the running container instance containerID ("<runtime>://<id>" or
// the bare ID) of the named container is ready: started, and its readiness probe succeeded
// (or it has none). The spec decides which probes exist, so a container whose worker has not
// seen it yet is not ready.
func (r *Results) Ready(pod *v1.Pod, container, containerID string) bool {
	spec := findContainer(pod, container)
	if spec == nil {
		return true
	}
	if !r.Started(pod, container, containerID) {
		return false
	}
	if spec.ReadinessProbe == nil {
		return true
	}
	return r.succeeded(workerKey{uid: pod.UID, container: container, kind: readiness}, containerID, true)
}

// Started reports whether the container instance passed its startup probe (true without one).
// Unlike readiness, asking does not probe early: as upstream, a startup probe runs at its period
// only, so failureThreshold × period is the whole time a container has to start.
func (r *Results) Started(pod *v1.Pod, container, containerID string) bool {
	spec := findContainer(pod, container)
	if spec == nil || spec.StartupProbe == nil {
		return true
	}
	return r.succeeded(workerKey{uid: pod.UID, container: container, kind: startup}, containerID, false)
}

// succeeded reports a success for this instance; with no result for it yet and wake set it
// wakes the worker, so a new container is probed now instead of at the next period.
func (r *Results) succeeded(key workerKey, containerID string, wake bool) bool {
	id := podutil.BareContainerID(containerID)
	r.mu.Lock()
	defer r.mu.Unlock()
	res, ok := r.results[key]
	if ok && res.containerID == id {
		return res.value == success
	}
	if w := r.wakers[key]; w != nil && wake {
		w()
	}
	return false
}

// set records key's result for a container instance and reports whether it changed.
func (r *Results) set(key workerKey, containerID string, value result) bool {
	next := probeResult{containerID: podutil.BareContainerID(containerID), value: value}
	r.mu.Lock()
	defer r.mu.Unlock()
	if old, ok := r.results[key]; ok && old == next {
		return false
	}
	r.results[key] = next
	return true
}

// watch registers the worker of key; wake must not block.
func (r *Results) watch(key workerKey, wake func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.wakers[key] = wake
}

// forget drops key's result and worker.
func (r *Results) forget(key workerKey) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.results, key)
	delete(r.wakers, key)
}

// forgetPod drops every result and worker of the pod.
func (r *Results) forgetPod(uid types.UID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for key := range r.results {
		if key.uid == uid {
			delete(r.results, key)
		}
	}
	for key := range r.wakers {
		if key.uid == uid {
			delete(r.wakers, key)
		}
	}
}
