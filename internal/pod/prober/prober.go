// Package prober runs the liveness, readiness and startup probes of running containers: one
// goroutine per (pod, container, probe type). Readiness and startup results feed the pod status;
// a liveness or startup failure kills the container, and the normal pod sync restarts it.
package prober

import (
	"context"
	"net/http"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/internal/lib/goroutines"
	"github.com/nodelet/nodelet/internal/podspec/sidecar"
	"github.com/nodelet/nodelet/internal/runtime/handlerio"
)

// UserAgent is what HTTP and gRPC probes identify as, like the kubelet of the same version.
const UserAgent = "kube-probe/1.33"

// Deps are the runtime, status and event hooks the probers use.
type Deps struct {
	// Exec runs cmd in the container (runtime ID, without "<runtime>://") within timeout.
	// A non-nil err means the command could not be run or timed out.
	Exec func(ctx context.Context, containerID string, cmd []string, timeout time.Duration) (stdout, stderr []byte, exitCode int32, err error)
	// Kill stops one container (ID as in the API status, "<runtime>://<id>") within gracePeriod
	// seconds (-1: the pod's own) after a liveness or startup failure. It records the Killing
	// event with message (runtime.ContainerKiller does).
	Kill func(ctx context.Context, pod *v1.Pod, containerID string, gracePeriod int64, message string) error
	// Status returns the latest computed API status of a pod: container IDs, states, pod IP.
	Status func(uid types.UID) (v1.PodStatus, bool)
	// Recorder receives the Unhealthy and ProbeWarning events; nil drops them.
	Recorder record.EventRecorder
	// OnResult, when set, hears of every probe run, for prober_probe_total: probeType is
	// "Liveness", "Readiness" or "Startup", result "successful", "failed" or "unknown".
	OnResult func(probeType, result string, pod *v1.Pod, container string)
	// Results is where the workers publish their results, read by the runtime too; nil gives
	// the Manager a store of its own.
	Results *Results
}

// Manager owns the probe workers. Create it with New.
type Manager struct {
	deps    Deps
	updates chan types.UID
	client  *http.Client // for HTTP probes
	// unit is one "second" of the probe spec; tests shorten it.
	unit time.Duration

	results *Results

	mu      sync.Mutex // held before results' own lock
	workers map[workerKey]*worker
	killing map[types.UID]int      // probe kills in progress, by pod
	running *goroutines.Goroutines // the workers, under Run's context
}

type workerKey struct {
	uid       types.UID
	container string
	kind      probeKind
}

// probeResult is the last result a worker published, for one container instance.
type probeResult struct {
	containerID string // runtime ID, without the scheme
	value       result
}

// New returns a Manager with no workers.
func New(deps Deps) *Manager {
	if deps.Recorder == nil {
		deps.Recorder = &record.FakeRecorder{}
	}
	if deps.Results == nil {
		deps.Results = NewResults()
	}
	return &Manager{
		deps:    deps,
		updates: make(chan types.UID, 100),
		client:  handlerio.NewClient(),
		unit:    time.Second,
		workers: map[workerKey]*worker{},
		killing: map[types.UID]int{},
		results: deps.Results,
		running: goroutines.New(),
	}
}

// Run runs the workers AddPod starts, each on a context of its own under ctx, until ctx ends;
// then it waits for every worker to return.
func (m *Manager) Run(ctx context.Context) error { return m.running.Run(ctx) }

// claimWorker hands a starting worker its stop, unless RemovePod removed it before it started.
func (m *Manager) claimWorker(w *worker, stop context.CancelFunc) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.workers[w.key] != w {
		return false
	}
	w.cancel = stop
	return true
}

// Updates delivers the UIDs of pods whose readiness or startup result changed, or whose
// container a probe killed; the sync loop resyncs them.
func (m *Manager) Updates() <-chan types.UID { return m.updates }

// AddPod has Run start a worker for every probe of pod's containers (and restartable init containers)
// that has none, and hands the newest pod object to the existing ones. Call it at every sync.
func (m *Manager) AddPod(pod *v1.Pod) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, c := range probedContainers(pod) {
		for kind, probe := range map[probeKind]*v1.Probe{liveness: c.LivenessProbe, readiness: c.ReadinessProbe, startup: c.StartupProbe} {
			if probe == nil {
				continue
			}
			key := workerKey{uid: pod.UID, container: c.Name, kind: kind}
			if w, ok := m.workers[key]; ok {
				w.setPod(pod)
				continue
			}
			w := newWorker(m, key, pod, probe)
			m.workers[key] = w
			m.results.watch(key, w.wake)
			m.running.GoStoppable(func(stop context.CancelFunc) bool { return m.claimWorker(w, stop) }, w.run)
		}
	}
}

// RemovePod stops the pod's workers and forgets their results.
func (m *Manager) RemovePod(pod *v1.Pod) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for key, w := range m.workers {
		if key.uid == pod.UID {
			w.stop()
			delete(m.workers, key)
		}
	}
	m.results.forgetPod(pod.UID)
}

// Ready is Results.Ready on the Manager's store.
func (m *Manager) Ready(pod *v1.Pod, container, containerID string) bool {
	return m.results.Ready(pod, container, containerID)
}

// Started is Results.Started on the Manager's store.
func (m *Manager) Started(pod *v1.Pod, container, containerID string) bool {
	return m.results.Started(pod, container, containerID)
}

// Killing reports whether a probe is killing one of the pod's containers now (its preStop hook
// and grace period included). Upstream kills such a container in the pod's own sync, so nothing
// else of the pod starts or stops until that kill ends; the pod sync holds likewise, and the
// kill's end resyncs the pod.
func (m *Manager) Killing(uid types.UID) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.killing[uid] > 0
}

// trackKill counts a probe kill of the pod's from now until the returned func is called.
func (m *Manager) trackKill(uid types.UID) (done func()) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.killing[uid]++
	return func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		if m.killing[uid]--; m.killing[uid] <= 0 {
			delete(m.killing, uid)
		}
	}
}

// setResult publishes w's result and reports whether it changed. A worker that was removed
// publishes nothing.
func (m *Manager) setResult(w *worker, containerID string, value result) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.workers[w.key] != w {
		return false
	}
	return m.results.set(w.key, containerID, value)
}

// removeWorker forgets a worker that stopped on its own (its container will not run again).
func (m *Manager) removeWorker(w *worker) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.workers[w.key] == w {
		delete(m.workers, w.key)
		m.results.forget(w.key)
	}
}

// notify asks for a resync of the pod; it gives up only when the worker is stopped.
func (m *Manager) notify(ctx context.Context, uid types.UID) {
	select {
	case m.updates <- uid:
	case <-ctx.Done():
		klog.V(4).InfoS("Probe update dropped: worker stopped", "podUID", uid)
	}
}

// probedContainers are the containers that can carry probes: app containers and sidecars
// (init containers with restartPolicy Always).
func probedContainers(pod *v1.Pod) []*v1.Container {
	var out []*v1.Container
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		if sidecar.Is(c) {
			out = append(out, c)
		}
	}
	for i := range pod.Spec.Containers {
		out = append(out, &pod.Spec.Containers[i])
	}
	return out
}

func findContainer(pod *v1.Pod, name string) *v1.Container {
	for _, c := range probedContainers(pod) {
		if c.Name == name {
			return c
		}
	}
	return nil
}
