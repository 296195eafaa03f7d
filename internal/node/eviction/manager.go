package eviction

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	"k8s.io/utils/clock"
)

// MonitoringInterval is how often the signals are read, as upstream's housekeeping does.
const MonitoringInterval = 10 * time.Second

// ReasonEvicted is the pod status reason and event reason of an eviction.
const ReasonEvicted = "Evicted"

// After an eviction the manager waits for the pod's cleanup before it looks again, polling
// every podCleanupPoll for at most podCleanupTimeout (upstream's figures): until a pod's
// containers are stopped and its memory-backed volumes unmounted, what it held still counts
// against the node, and a second look would evict the next pod for the same shortage.
const (
	podCleanupPoll    = time.Second
	podCleanupTimeout = 30 * time.Second
)

// immediateGracePeriod is the grace period of a pod evicted for a hard threshold.
const immediateGracePeriod int64 = 1

// SummaryProvider gives the node and pod stats the signals come from (*stats.Provider).
type SummaryProvider interface {
	Summary(ctx context.Context) (*statsapi.Summary, error)
}

// Reclaimer frees node-level disk before any pod is evicted: the container GC's
// DeleteAllUnusedContainers and the image GC's DeleteUnusedImages.
type Reclaimer func(ctx context.Context) error

// Eviction says why a pod is evicted.
type Eviction struct {
	// Message is the pod status message and the Evicted event's text.
	Message string
	// Annotations go on the Evicted event (nil for a local storage limit).
	Annotations map[string]string
	// NodePressure: evicted for a node threshold (the pod gets a DisruptionTarget condition),
	// not for its own local storage limit.
	NodePressure bool
}

// Evictor kills pod with the grace period, records phase Failed, reason Evicted and the
// message, and posts the Evicted event.
type Evictor func(pod *v1.Pod, gracePeriodSeconds int64, why Eviction)

// Deps are what the manager reads and acts through.
type Deps struct {
	Summary SummaryProvider
	// ActivePods are the pods admitted and not yet terminated.
	ActivePods func() []*v1.Pod
	Evict      Evictor
	// DiskReclaimers run, in order, when a disk signal is short.
	DiskReclaimers []Reclaimer
	// Critical says a pod must never be evicted for node pressure (static, mirror or
	// system-critical pods).
	Critical func(pod *v1.Pod) bool
	// OnEvict is told each eviction's signal (the kubelet_evictions metric); may be nil.
	OnEvict func(signal string)
	// CleanedUp says an evicted pod's containers are stopped and its volumes torn down;
	// Run waits for it after each eviction. Nil: Run does not wait.
	CleanedUp func(pod *v1.Pod) bool
	// MemoryCgroups are the memory cgroup directories the memory signals come from
	// (memory.available: the root; allocatableMemory.available: kubepods), needed with
	// Config.KernelMemcgNotification.
	MemoryCgroups map[Signal]string
	Clock         clock.Clock
}

// Manager is the eviction manager: Run it, ask it for pressure and admission.
type Manager struct {
	cfg        Config
	thresholds []Threshold
	deps       Deps

	mu            sync.Mutex
	firstShort    map[Threshold]time.Time // when each threshold was first seen crossed
	lastPressure  map[v1.NodeConditionType]time.Time
	acting        map[Signal]bool // thresholds acted on: resolved only with their minimum reclaim
	lastObserved  map[Signal]observation
	synchronizing sync.Mutex

	// notifiers wake the manager when a memory threshold is crossed between cycles.
	notifiers map[Threshold]*memcgNotifier
	wake      chan struct{}
}

// New builds a manager; the configuration's thresholds must parse.
func New(cfg Config, deps Deps) (*Manager, error) {
	ts, err := ParseThresholds(cfg)
	if err != nil {
		return nil, err
	}
	if deps.Clock == nil {
		deps.Clock = clock.RealClock{}
	}
	m := &Manager{
		cfg: cfg, thresholds: ts, deps: deps,
		firstShort: map[Threshold]time.Time{}, lastPressure: map[v1.NodeConditionType]time.Time{},
		acting: map[Signal]bool{}, lastObserved: map[Signal]observation{},
		notifiers: map[Threshold]*memcgNotifier{}, wake: make(chan struct{}, 1),
	}
	if cfg.KernelMemcgNotification {
		for _, t := range ts {
			if !isMemory(t.Signal) {
				continue
			}
			dir := deps.MemoryCgroups[t.Signal]
			if dir == "" {
				return nil, fmt.Errorf("kernelMemcgNotification: no memory cgroup is known for %s", t.Signal)
			}
			m.notifiers[t] = &memcgNotifier{dir: dir, wake: m.wake}
		}
	}
	return m, nil
}

// Run reads the signals every MonitoringInterval, and at once when the kernel says a memory
// threshold was crossed, until ctx ends.
func (m *Manager) Run(ctx context.Context) error {
	klog.InfoS("Starting the eviction manager", "thresholds", len(m.thresholds), "interval", MonitoringInterval,
		"memoryThresholdNotifiers", len(m.notifiers))
	defer m.stopNotifiers()
	for {
		if evicted := m.Synchronize(ctx); len(evicted) > 0 && m.deps.CleanedUp != nil {
			m.waitForCleanup(ctx, evicted)
			m.drainWake() // a crossing signalled while waiting is what the next cycle reads
			if ctx.Err() != nil {
				return nil
			}
			continue
		}
		select {
		case <-ctx.Done():
			return nil
		case <-m.deps.Clock.After(MonitoringInterval):
		case <-m.wake:
			klog.V(2).InfoS("Eviction manager: the kernel reports a memory threshold crossed")
		}
	}
}

// waitForCleanup returns once every evicted pod is cleaned up, after podCleanupTimeout, or
// when ctx ends.
func (m *Manager) waitForCleanup(ctx context.Context, evicted []*v1.Pod) {
	klog.InfoS("Eviction manager: waiting for the evicted pods to be cleaned up", "pods", klog.KObjSlice(evicted))
	deadline := m.deps.Clock.Now().Add(podCleanupTimeout)
	for {
		select {
		case <-ctx.Done():
			return
		case <-m.deps.Clock.After(podCleanupPoll):
		}
		if slices.IndexFunc(evicted, func(p *v1.Pod) bool { return !m.deps.CleanedUp(p) }) < 0 {
			return
		}
		if !m.deps.Clock.Now().Before(deadline) {
			klog.InfoS("Eviction manager: evicted pods not cleaned up in time; looking again", "pods", klog.KObjSlice(evicted), "timeout", podCleanupTimeout)
			return
		}
	}
}

func (m *Manager) drainWake() {
	select {
	case <-m.wake:
	default:
	}
}

// Synchronize runs one cycle: observe, update pressure, act on local storage limits, then
// on the first threshold whose grace period has passed. It evicts at most one pod for node
// pressure, and returns the pods it evicted.
func (m *Manager) Synchronize(ctx context.Context) []*v1.Pod {
	m.synchronizing.Lock()
	defer m.synchronizing.Unlock()
	summary, err := m.deps.Summary.Summary(ctx)
	if err != nil {
		klog.ErrorS(err, "Eviction manager: cannot read node stats; not acting this cycle")
		return nil
	}
	now := m.deps.Clock.Now()
	obs := observe(summary)
	m.updateNotifiers(obs)
	actionable := m.update(obs, now)
	cands := candidates(m.deps.ActivePods(), summary)
	if m.cfg.LocalStorageCapacityIsolation {
		if evicted := m.evictOverLimits(cands); len(evicted) > 0 {
			return evicted
		}
	}
	if len(actionable) == 0 {
		return nil
	}
	t := actionable[0]
	klog.InfoS("Eviction manager: threshold crossed", "signal", t.Signal, "threshold", t.Value, "available", obs[t.Signal].available)
	if isDisk(t.Signal) && m.reclaimNodeDisk(ctx, t) {
		return nil
	}
	if p := m.evictOne(cands, t, obs[t.Signal]); p != nil {
		return []*v1.Pod{p}
	}
	return nil
}

// update records which thresholds are crossed now and returns those whose grace period has
// passed, in signal order.
func (m *Manager) update(obs map[Signal]observation, now time.Time) []Threshold {
	m.mu.Lock()
	defer m.mu.Unlock()
	var actionable []Threshold
	crossedSignals := map[Signal]bool{}
	for _, s := range signalOrder {
		for _, t := range m.thresholds {
			o, ok := obs[t.Signal]
			if t.Signal != s || !ok {
				continue
			}
			if !t.short(o, m.acting[s]) {
				delete(m.firstShort, t)
				continue
			}
			crossedSignals[s] = true
			first, seen := m.firstShort[t]
			if !seen {
				first = now
				m.firstShort[t] = now
			}
			if now.Sub(first) >= t.GracePeriod {
				actionable = append(actionable, t)
			}
		}
		m.acting[s] = crossedSignals[s]
	}
	for s, o := range obs {
		m.lastObserved[s] = o
	}
	for s := range crossedSignals {
		m.lastPressure[conditionOf(s)] = now
	}
	return actionable
}

func conditionOf(s Signal) v1.NodeConditionType {
	switch s {
	case MemoryAvailable, AllocatableMemoryAvailable:
		return v1.NodeMemoryPressure
	case PIDAvailable:
		return v1.NodePIDPressure
	}
	return v1.NodeDiskPressure
}

// Pressure reports the node conditions: a pressure stays set for the transition period after
// its last crossed threshold (node.Deps.Pressure).
func (m *Manager) Pressure() (memory, disk, pid bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.deps.Clock.Now()
	on := func(c v1.NodeConditionType) bool {
		at, ok := m.lastPressure[c]
		return ok && now.Sub(at) < m.cfg.PressureTransitionPeriod
	}
	return on(v1.NodeMemoryPressure), on(v1.NodeDiskPressure), on(v1.NodePIDPressure)
}

// reclaimNodeDisk runs the disk reclaimers and reports whether that resolved t.
func (m *Manager) reclaimNodeDisk(ctx context.Context, t Threshold) bool {
	for _, reclaim := range m.deps.DiskReclaimers {
		if err := reclaim(ctx); err != nil {
			klog.ErrorS(err, "Eviction manager: reclaiming node disk failed", "signal", t.Signal)
		}
	}
	summary, err := m.deps.Summary.Summary(ctx)
	if err != nil {
		return false
	}
	o, ok := observe(summary)[t.Signal]
	if ok && !t.short(o, true) {
		klog.InfoS("Eviction manager: node-level reclaim resolved the threshold; no pod evicted", "signal", t.Signal, "available", o.available)
		return true
	}
	return false
}

// evictOne evicts the first pod in rank that may be evicted and returns it (nil: none may).
func (m *Manager) evictOne(cands []candidate, t Threshold, o observation) *v1.Pod {
	rank(cands, t.Signal)
	for _, c := range cands {
		if m.deps.Critical != nil && m.deps.Critical(c.pod) {
			continue
		}
		grace := immediateGracePeriod
		if !t.Hard {
			grace = m.cfg.MaxPodGracePeriodSeconds
			if g := c.pod.Spec.TerminationGracePeriodSeconds; g != nil && *g < grace {
				grace = *g
			}
		}
		msg, annotations := message(t.Signal, t, o, c)
		m.evict(c.pod, grace, Eviction{Message: msg, Annotations: annotations, NodePressure: true}, string(t.Signal))
		return c.pod
	}
	klog.ErrorS(nil, "Eviction manager: no pod to evict", "signal", t.Signal)
	return nil
}

func (m *Manager) evict(pod *v1.Pod, grace int64, why Eviction, signal string) {
	klog.InfoS("Eviction manager: evicting pod", "pod", klog.KObj(pod), "signal", signal, "gracePeriod", grace, "message", why.Message)
	m.deps.Evict(pod, grace, why)
	if m.deps.OnEvict != nil {
		m.deps.OnEvict(signal)
	}
}

// candidates pairs each active pod with its stats.
func candidates(pods []*v1.Pod, s *statsapi.Summary) []candidate {
	byUID := map[string]*statsapi.PodStats{}
	for i := range s.Pods {
		byUID[s.Pods[i].PodRef.UID] = &s.Pods[i]
	}
	out := make([]candidate, 0, len(pods))
	for _, p := range pods {
		out = append(out, candidate{pod: p, stats: byUID[string(p.UID)]})
	}
	return out
}

// String names a threshold in logs.
func (t Threshold) String() string {
	kind := "hard"
	if !t.Hard {
		kind = fmt.Sprintf("soft(%v)", t.GracePeriod)
	}
	return fmt.Sprintf("%s<%s %s", t.Signal, t.Value, kind)
}
