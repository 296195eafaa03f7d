package source

import (
	"context"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/internal/podspec/podutil"
)

// Merger turns full snapshots from each source into one ordered stream of
// PodUpdates. Sources send []*v1.Pod on their channel; the merger diffs each
// against that source's previous snapshot.
type Merger struct {
	mu      sync.Mutex
	sources map[string]*sourcePods
	queue   []PodUpdate   // updates not yet taken by the consumer, in order
	wake    chan struct{} // signals the delivery loop that queue grew or a source was added
	seq     uint64        // Seq of the last update queued
	updates chan PodUpdate
}

// sourcePods is what the merger knows about one source.
type sourcePods struct {
	in      chan []*v1.Pod
	reading bool   // Run reads in
	seen    bool   // delivered at least one snapshot
	seenSeq uint64 // Seq of the last update queued once its first snapshot was merged
	pods    map[types.UID]*v1.Pod
	order   []types.UID // snapshot order, so updates list pods deterministically
	// refused are the UIDs of the last snapshot's pods dropped as unsafe, logged once.
	refused map[types.UID]bool
}

// NewMerger returns a merger with no sources.
func NewMerger() *Merger {
	return &Merger{
		sources: map[string]*sourcePods{},
		wake:    make(chan struct{}, 1),
		updates: make(chan PodUpdate),
	}
}

// Channel registers source (once; later calls return the same channel) and
// returns where its snapshots go. Each snapshot is the source's complete set;
// the source must not modify the pods once sent.
func (m *Merger) Channel(source string) chan<- []*v1.Pod {
	m.mu.Lock()
	defer m.mu.Unlock()
	if st, ok := m.sources[source]; ok {
		return st.in
	}
	st := &sourcePods{in: make(chan []*v1.Pod), pods: map[types.UID]*v1.Pod{}}
	m.sources[source] = st
	m.signal() // a running merger starts reading it
	return st.in
}

// Updates returns the merged stream. It is never closed; stop reading when
// the context given to Run is done.
func (m *Merger) Updates() <-chan PodUpdate { return m.updates }

// SeenAllSources reports whether every named source has sent a snapshot.
func (m *Merger) SeenAllSources(expected ...string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, name := range expected {
		if st, ok := m.sources[name]; !ok || !st.seen {
			return false
		}
	}
	return true
}

// SyncedThrough returns the Seq a consumer must have handled to know the first snapshot of
// every named source, and whether each has sent one yet.
func (m *Merger) SyncedThrough(expected ...string) (uint64, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var through uint64
	for _, name := range expected {
		st, ok := m.sources[name]
		if !ok || !st.seen {
			return 0, false
		}
		through = max(through, st.seenSeq)
	}
	return through, true
}

// Run merges snapshots and delivers updates until ctx is done; it returns once every source's
// reader stopped.
func (m *Merger) Run(ctx context.Context) error {
	var readers sync.WaitGroup
	defer func() {
		m.mu.Lock()
		for _, st := range m.sources {
			st.reading = false
		}
		m.mu.Unlock()
		readers.Wait()
	}()
	m.deliver(ctx, &readers)
	return nil
}

// startReadersLocked starts a reader for each source without one; callers hold m.mu.
func (m *Merger) startReadersLocked(ctx context.Context, readers *sync.WaitGroup) {
	for name, st := range m.sources {
		if !st.reading {
			st.reading = true
			m.startReader(ctx, readers, name, st.in)
		}
	}
}

// startReader reads one source's channel until ctx ends.
func (m *Merger) startReader(ctx context.Context, readers *sync.WaitGroup, source string, in <-chan []*v1.Pod) {
	readers.Go(func() {
		for {
			select {
			case <-ctx.Done():
				return
			case pods := <-in:
				m.merge(source, pods)
			}
		}
	})
}

// deliver hands queued updates to the consumer one at a time, in order. The
// queue is unbounded so a slow consumer never blocks a source.
func (m *Merger) deliver(ctx context.Context, readers *sync.WaitGroup) {
	for {
		m.mu.Lock()
		m.startReadersLocked(ctx, readers)
		if len(m.queue) == 0 {
			m.mu.Unlock()
			select {
			case <-ctx.Done():
				return
			case <-m.wake:
				continue
			}
		}
		next := m.queue[0]
		m.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-m.wake:
			continue // a new source to read; next is still first in the queue
		case m.updates <- next:
		}
		m.mu.Lock()
		m.queue[0] = PodUpdate{}
		m.queue = m.queue[1:]
		m.mu.Unlock()
	}
}

// merge diffs a snapshot against the source's previous one and queues the
// resulting updates: REMOVE, ADD, UPDATE, DELETE, RECONCILE.
func (m *Merger) merge(source string, snapshot []*v1.Pod) {
	m.mu.Lock()
	defer m.mu.Unlock()
	st := m.sources[source]
	first := !st.seen
	st.seen = true
	pods, order := m.accept(source, st, snapshot)

	groups := make(map[Op][]*v1.Pod)
	for _, uid := range st.order {
		if _, ok := pods[uid]; !ok {
			groups[REMOVE] = append(groups[REMOVE], st.pods[uid].DeepCopy())
		}
	}
	for _, uid := range order {
		pod := pods[uid]
		old, ok := st.pods[uid]
		if !ok {
			groups[ADD] = append(groups[ADD], pod.DeepCopy())
			continue
		}
		if old == pod {
			continue // kept as it was (accept)
		}
		if op, changed := classify(old, pod); changed {
			groups[op] = append(groups[op], pod.DeepCopy())
		}
	}
	st.pods, st.order = pods, order

	queued := false
	for _, op := range []Op{REMOVE, ADD, UPDATE, DELETE, RECONCILE} {
		if len(groups[op]) > 0 {
			m.seq++
			m.queue = append(m.queue, PodUpdate{Op: op, Source: source, Pods: groups[op], Seq: m.seq})
			klog.V(3).InfoS("Pod update", "op", op, "source", source, "pods", len(groups[op]))
			queued = true
		}
	}
	if first {
		st.seenSeq = m.seq
	}
	if queued {
		m.signal()
	}
}

// signal wakes the delivery loop; a pending wake-up is enough.
func (m *Merger) signal() {
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

// accept copies the snapshot's pods (so later changes by the source cannot
// reach the stored ones), stamps the source annotations and drops pods
// without or with a repeated UID, or whose UID, name or namespace is unsafe on the host.
func (m *Merger) accept(source string, st *sourcePods, snapshot []*v1.Pod) (map[types.UID]*v1.Pod, []types.UID) {
	pods := make(map[types.UID]*v1.Pod, len(snapshot))
	order := make([]types.UID, 0, len(snapshot))
	refused := map[types.UID]bool{}
	defer func() { st.refused = refused }()
	for _, in := range snapshot {
		if in == nil {
			continue
		}
		if in.UID == "" {
			klog.ErrorS(nil, "Ignoring pod without UID", "source", source, "pod", klog.KObj(in))
			continue
		}
		if err := SafePathFields(in); err != nil {
			// Static pods were validated already; an API pod was by the API server. This
			// guards the host paths named after UID, name and namespace all the same.
			if !st.refused[in.UID] {
				klog.ErrorS(err, "Ignoring pod whose UID, name or namespace cannot name a host directory", "source", source, "pod", klog.KObj(in))
			}
			refused[in.UID] = true
			continue
		}
		if _, dup := pods[in.UID]; dup {
			klog.ErrorS(nil, "Ignoring pod with duplicate UID", "source", source, "pod", klog.KObj(in), "uid", in.UID)
			continue
		}
		if old := st.pods[in.UID]; source == podutil.APISource && old != nil && sameVersion(old, in) {
			// The API server's object is unchanged: keep the stored copy, with nothing to
			// compare (a burst of pods would otherwise compare every pod at each change).
			pods[in.UID] = old
			order = append(order, in.UID)
			continue
		}
		pod := in.DeepCopy()
		if pod.Annotations == nil {
			pod.Annotations = map[string]string{}
		}
		// Always the source it came through: a mirror pod read from the API
		// carries its static pod's "file" and must not look static.
		pod.Annotations[podutil.AnnotationSource] = source
		if pod.Annotations[podutil.AnnotationSeen] == "" {
			// Sources that don't stamp first-seen (the API) get it here, kept per UID.
			seen := time.Now().UTC().Format(time.RFC3339Nano)
			if old, ok := st.pods[in.UID]; ok && old.Annotations[podutil.AnnotationSeen] != "" {
				seen = old.Annotations[podutil.AnnotationSeen]
			}
			pod.Annotations[podutil.AnnotationSeen] = seen
		}
		pods[pod.UID] = pod
		order = append(order, pod.UID)
	}
	return pods, order
}

// classify says how pod changed from old, if it did in a way that matters.
func classify(old, pod *v1.Pod) (Op, bool) {
	if old.DeletionTimestamp == nil && pod.DeletionTimestamp != nil {
		return DELETE, true
	}
	if specChanged(old, pod) {
		return UPDATE, true
	}
	if !equality.Semantic.DeepEqual(old.Status, pod.Status) {
		return RECONCILE, true
	}
	return 0, false
}

func specChanged(old, pod *v1.Pod) bool {
	return !equality.Semantic.DeepEqual(old.Spec, pod.Spec) ||
		!equality.Semantic.DeepEqual(old.Labels, pod.Labels) ||
		!equality.Semantic.DeepEqual(old.DeletionGracePeriodSeconds, pod.DeletionGracePeriodSeconds) ||
		!equality.Semantic.DeepEqual(withoutSeen(old.Annotations), withoutSeen(pod.Annotations))
}

// withoutSeen drops the first-seen time, which says nothing about the pod.
func withoutSeen(annotations map[string]string) map[string]string {
	if _, ok := annotations[podutil.AnnotationSeen]; !ok {
		return annotations
	}
	out := make(map[string]string, len(annotations))
	for k, v := range annotations {
		if k != podutil.AnnotationSeen {
			out[k] = v
		}
	}
	return out
}
