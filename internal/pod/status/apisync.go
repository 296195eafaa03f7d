package status

import (
	"context"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodelet/nodelet/internal/lib/kubeclient"
	"github.com/nodelet/nodelet/internal/podspec/podutil"
)

// MirrorLookup returns the live mirror pod of a static pod, if the API holds one.
type MirrorLookup func(static *v1.Pod) (*v1.Pod, bool)

// Timing of the API syncer's retries.
const (
	// apiResync is how often pods whose status could not be written yet (a failed patch, a
	// static pod without a mirror) are tried again at the latest.
	apiResync = 10 * time.Second
	// apiRetryBase is the first back-off after a failure; it doubles up to apiResync.
	apiRetryBase = 500 * time.Millisecond
	// apiRequestTimeout bounds one API call, so a hung connection cannot stall every pod.
	apiRequestTimeout = 30 * time.Second
)

// APISyncer writes the statuses nodelet computes to the pods in the API server (static pods'
// to their mirror pods) and completes graceful deletions once a pod's containers are gone.
// StatusChanged, MirrorChanged, PodTerminated and Forget never block on the API; one worker
// (Run) makes all API calls, always writing the newest status it holds for a pod.
type APISyncer struct {
	client   kubeclient.Interface
	mirrorOf MirrorLookup

	resync    time.Duration
	retryBase time.Duration

	mu   sync.Mutex
	pods map[types.UID]*apiEntry // keyed by the UID of nodelet's pod (the static pod's for static pods)
	wake chan struct{}
}

// apiEntry is what the syncer holds for one pod.
type apiEntry struct {
	pod       *v1.Pod       // nodelet's pod: from the API, or static
	status    *v1.PodStatus // newest status to write; nil until one is given
	version   uint64        // bumped by every change that may need a write
	written   uint64        // version last written (or found already in place)
	terminate bool          // delete the API pod once its status is written
	failures  int
	due       time.Time // no attempt before this

	// The status of the API object last written or read, and its UID: the base of the next
	// patch, so an unchanged status costs no request at all.
	cachedUID    types.UID
	cachedStatus *v1.PodStatus
}

// needsWork reports whether e still has something to do in the API.
func (e *apiEntry) needsWork() bool {
	return (e.status != nil && e.written != e.version) || e.terminate
}

// NewAPISyncer returns a syncer writing through client; lookup finds static pods' mirrors.
func NewAPISyncer(client kubeclient.Interface, lookup MirrorLookup) *APISyncer {
	return &APISyncer{
		client:    client,
		mirrorOf:  lookup,
		resync:    apiResync,
		retryBase: apiRetryBase,
		pods:      map[types.UID]*apiEntry{},
		wake:      make(chan struct{}, 1),
	}
}

var _ Syncer = (*APISyncer)(nil)

// StatusChanged records st as the newest status of pod and schedules its write.
func (s *APISyncer) StatusChanged(pod *v1.Pod, st v1.PodStatus) {
	if podutil.IsMirror(pod) {
		// A mirror pod is the API's picture of a static pod; nodelet runs (and reports) the
		// static pod itself.
		return
	}
	s.mu.Lock()
	e := s.entry(pod)
	e.pod = pod
	e.status = st.DeepCopy()
	s.touch(e)
	s.mu.Unlock()
	s.signal()
}

// MirrorChanged says static's mirror pod appeared or was replaced: its status is written there
// now rather than at the next resync.
func (s *APISyncer) MirrorChanged(static *v1.Pod) {
	s.mu.Lock()
	e, ok := s.pods[static.UID]
	if ok {
		s.touch(e)
	}
	s.mu.Unlock()
	if ok {
		s.signal()
	}
}

// PodTerminated says nodelet has stopped everything of pod. For a pod from the API that is being
// deleted, the syncer then writes its final status and deletes it for good (grace 0, UID
// precondition), which completes the graceful deletion the API server started. Other pods are
// ignored: static pods are not deleted through the API, and mirror pods are deleted by whoever
// manages them.
func (s *APISyncer) PodTerminated(pod *v1.Pod) {
	if pod.DeletionTimestamp == nil || podutil.IsStatic(pod) || podutil.IsMirror(pod) {
		return
	}
	s.mu.Lock()
	e := s.entry(pod)
	e.pod = pod
	e.terminate = true
	s.touch(e)
	s.mu.Unlock()
	s.signal()
}

// Reconcile takes a status the API holds for a pod (or mirror pod) as read from a watch, so a
// field someone else changed back is written again. Only the cached base of the next patch
// changes: when the API already shows nodelet's status, no request is made.
func (s *APISyncer) Reconcile(apiPod *v1.Pod) {
	s.mu.Lock()
	found := false
	for _, e := range s.pods {
		if e.cachedUID == apiPod.UID && e.status != nil {
			e.cachedStatus = apiPod.Status.DeepCopy()
			s.touch(e)
			found = true
		}
	}
	s.mu.Unlock()
	if found {
		s.signal()
	}
}

// Forget drops everything held for the pod with this UID (nodelet no longer knows the pod).
func (s *APISyncer) Forget(uid types.UID) {
	s.mu.Lock()
	delete(s.pods, uid)
	s.mu.Unlock()
}

// entry returns pod's entry, creating it; callers hold s.mu.
func (s *APISyncer) entry(pod *v1.Pod) *apiEntry {
	e, ok := s.pods[pod.UID]
	if !ok {
		e = &apiEntry{pod: pod}
		s.pods[pod.UID] = e
	}
	return e
}

// touch marks e as needing a write now; callers hold s.mu.
func (s *APISyncer) touch(e *apiEntry) {
	e.version++
	e.failures = 0
	e.due = time.Time{}
}

func (s *APISyncer) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Run writes statuses until ctx is done.
func (s *APISyncer) Run(ctx context.Context) error {
	timer := time.NewTimer(s.resync)
	defer timer.Stop()
	for {
		next := s.syncDue(ctx)
		wait := s.resync
		if !next.IsZero() {
			wait = min(max(time.Until(next), 0), s.resync)
		}
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			return nil
		case <-s.wake:
		case <-timer.C:
		}
	}
}

// syncDue works every entry that is due and returns when the earliest remaining one will be
// (zero if none waits).
func (s *APISyncer) syncDue(ctx context.Context) time.Time {
	now := time.Now()
	var due []types.UID
	s.mu.Lock()
	for uid, e := range s.pods {
		if e.needsWork() && !e.due.After(now) {
			due = append(due, uid)
		}
	}
	s.mu.Unlock()

	for _, uid := range due {
		if ctx.Err() != nil {
			return time.Time{}
		}
		s.syncOne(ctx, uid)
	}

	var next time.Time
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range s.pods {
		if e.needsWork() && (next.IsZero() || e.due.Before(next)) {
			next = e.due
		}
	}
	return next
}

// outcome is how one attempt on an entry ended.
type outcome int

const (
	done    outcome = iota // the API holds what it should
	gone                   // the pod is gone from the API: forget it
	pending                // a static pod has no mirror yet: wait for MirrorChanged or resync
	failed                 // an error: retry with back-off
	refetch                // the cached API status may be wrong: read it and retry
)

// syncOne writes one entry's status and completes its deletion when asked to.
func (s *APISyncer) syncOne(ctx context.Context, uid types.UID) {
	s.mu.Lock()
	e, ok := s.pods[uid]
	if !ok {
		s.mu.Unlock()
		return
	}
	w := work{pod: e.pod, version: e.version, terminate: e.terminate, cachedUID: e.cachedUID}
	if e.status != nil && e.written != e.version {
		w.status = e.status.DeepCopy()
	}
	if e.cachedStatus != nil {
		w.cachedStatus = e.cachedStatus.DeepCopy()
	}
	s.mu.Unlock()

	result := s.writeStatus(ctx, &w)
	if result == done && w.terminate {
		result = s.deletePod(ctx, w.pod)
	}
	s.finish(e, &w, result)
}

// finish records the result of an attempt on e, unless e was forgotten meanwhile.
func (s *APISyncer) finish(e *apiEntry, w *work, result outcome) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pods[w.pod.UID] != e {
		return
	}
	e.cachedUID, e.cachedStatus = w.cachedUID, w.cachedStatus
	switch result {
	case done:
		e.written = w.version
		e.failures = 0
		if w.terminate {
			delete(s.pods, w.pod.UID)
		}
	case gone:
		delete(s.pods, w.pod.UID)
	case pending:
		e.due = time.Now().Add(s.resync)
	case refetch:
		e.cachedUID, e.cachedStatus = "", nil
		e.failures++
		// The first conflict is retried at once; repeated ones back off.
		e.due = time.Now()
		if e.failures > 1 {
			e.due = time.Now().Add(s.backoff(e.failures - 1))
		}
	case failed:
		e.failures++
		e.due = time.Now().Add(s.backoff(e.failures))
	}
	if e.version != w.version {
		// A newer status, mirror or termination arrived during the attempt: go again now.
		e.due = time.Time{}
	}
}

func (s *APISyncer) backoff(failures int) time.Duration {
	d := s.retryBase
	for i := 1; i < failures && d < s.resync; i++ {
		d *= 2
	}
	return min(d, s.resync)
}

// Written reports whether every status given so far is in the API server (a shutting-down
// node waits for it before it exits).
func (s *APISyncer) Written() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range s.pods {
		if e.status != nil && e.written != e.version {
			return false
		}
	}
	return true
}

// Name names what the API syncer keeps per pod.
func (s *APISyncer) Name() string { return "API status" }

// ReleasePod forgets a pod removed for good (Forget).
func (s *APISyncer) ReleasePod(uid types.UID) error {
	s.Forget(uid)
	return nil
}
