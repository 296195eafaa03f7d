package volumes

import (
	"context"
	"errors"
	"math"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// PodStates tells the reconciler when a pod's volumes may go.
type PodStates interface {
	// ContainersGone reports whether no container of pod uid runs or can start any more:
	// its worker finished terminating it, or, for a pod nodelet no longer knows, the runtime
	// runs nothing of it.
	ContainersGone(uid types.UID) bool
}

const (
	// resyncPeriod is how often the reconciler looks again unasked: pods' containers go
	// without telling it. New pods and finished operations wake it at once.
	resyncPeriod = time.Second
	// reasonFailedMount is upstream's event reason for volumes that cannot be set up.
	reasonFailedMount = "FailedMount"
)

// retryBackoff spaces the attempts of a failing operation as upstream does: 500ms doubling
// to 2m2s.
var retryBackoff = wait.Backoff{Duration: 500 * time.Millisecond, Factor: 2, Cap: 2*time.Minute + 2*time.Second, Steps: math.MaxInt32}

// reconciler sets up the desired volumes and tears down those no pod wants, outside the pod
// workers: each operation runs in a goroutine of its own, one at a time per volume, and a
// failed one waits out its back-off.
type reconciler struct {
	m        *Manager
	pods     PodStates
	recorder record.EventRecorder
	clock    clock.Clock
	wake     chan struct{}

	mu      sync.Mutex
	busy    map[volumeKey]bool
	retries map[volumeKey]*retry
	ops     sync.WaitGroup
}

type retry struct {
	backoff wait.Backoff
	at      time.Time
}

// signal wakes the loop; it never blocks.
func (r *reconciler) signal() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

func (r *reconciler) run(ctx context.Context) {
	defer r.ops.Wait()
	for {
		next := r.reconcile(ctx)
		select {
		case <-ctx.Done():
			return
		case <-r.wake:
		case <-r.clock.After(next):
		}
	}
}

// reconcile starts what is due and returns how long until it should look again.
func (r *reconciler) reconcile(ctx context.Context) time.Duration {
	next := resyncPeriod
	now := r.clock.Now()
	r.tearDownUnwanted(ctx, now, &next)
	r.setUpWanted(ctx, now, &next)
	r.forgetRetries()
	r.m.inUse.forget(func(k volumeKey) bool { return r.m.desired.wants(k.uid, k.name) })
	return next
}

// setUpWanted sets up the desired volumes that are not set up (or only found at start), and
// sets up again the Refresher volumes their pod's sync asked for.
func (r *reconciler) setUpWanted(ctx context.Context, now time.Time, next *time.Duration) {
	for _, dp := range r.m.desired.list() {
		current := r.m.actual.volumes(dp.pod.UID)
		for name, dv := range dp.volumes {
			mv, ok := current[name]
			k := volumeKey{dp.pod.UID, name}
			if ok && !mv.uncertain && mv.refreshed >= mv.refreshWanted {
				if size := r.m.expansionWanted(dv, mv); size > 0 && !mv.tearingDown && r.start(k, now, next) {
					go r.expand(ctx, dp.pod, k, dv, mv.dir, size)
				}
				continue
			}
			if r.start(k, now, next) {
				go r.setUp(ctx, dp.pod, k, dv, mv.refreshWanted)
			}
		}
	}
}

// tearDownUnwanted tears down the volumes no desired pod wants, once their pod's containers
// are gone.
func (r *reconciler) tearDownUnwanted(ctx context.Context, now time.Time, next *time.Duration) {
	gone := map[types.UID]bool{}
	for k, mv := range r.m.actual.all() {
		if mv.tearingDown || r.m.desired.wants(k.uid, k.name) {
			continue
		}
		g, asked := gone[k.uid]
		if !asked {
			g = r.pods.ContainersGone(k.uid)
			gone[k.uid] = g
		}
		if g && r.start(k, now, next) {
			go r.tearDown(ctx, k, mv)
		}
	}
}

// start claims k for an operation unless one is running or its back-off holds.
func (r *reconciler) start(k volumeKey, now time.Time, next *time.Duration) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.busy[k] {
		return false
	}
	if rt := r.retries[k]; rt != nil && now.Before(rt.at) {
		*next = min(*next, rt.at.Sub(now))
		return false
	}
	r.busy[k] = true
	r.ops.Add(1)
	return true
}

// finish ends k's operation, arming its back-off when it failed, and wakes the loop.
func (r *reconciler) finish(k volumeKey, failed bool) {
	r.mu.Lock()
	delete(r.busy, k)
	if failed {
		rt := r.retries[k]
		if rt == nil {
			rt = &retry{backoff: retryBackoff}
			r.retries[k] = rt
		}
		rt.at = r.clock.Now().Add(rt.backoff.Step())
	} else {
		delete(r.retries, k)
	}
	r.mu.Unlock()
	r.ops.Done()
	r.signal()
}

// forgetRetries drops the back-off of volumes neither wanted nor set up any more.
func (r *reconciler) forgetRetries() {
	actual := r.m.actual.all()
	r.mu.Lock()
	defer r.mu.Unlock()
	for k := range r.retries {
		if _, ok := actual[k]; !ok && !r.m.desired.wants(k.uid, k.name) {
			delete(r.retries, k)
		}
	}
}

func (r *reconciler) setUp(ctx context.Context, pod *v1.Pod, k volumeKey, dv desiredVolume, refresh int) {
	dir := r.m.volumeDir(k.uid, dv.plugin.Name(), k.name)
	err := r.m.checkNodeAffinity(dv.spec.PV)
	if err == nil {
		err = r.m.awaitReportedInUse(ctx, pod, k, dv)
	}
	var m Mount
	if err == nil {
		m, err = dv.plugin.SetUp(ctx, pod, dv.spec, dir)
	}
	if errors.Is(err, errNoLongerWanted) {
		r.finish(k, false)
		return
	}
	if err != nil {
		klog.ErrorS(err, "MountVolume.SetUp failed", "pod", klog.KObj(pod), "volume", k.name, "plugin", dv.plugin.Name())
		r.recorder.Eventf(pod, v1.EventTypeWarning, reasonFailedMount, "MountVolume.SetUp failed for volume %q : %v", k.name, err)
		r.finish(k, true)
		return
	}
	r.m.actual.markSetUp(k, dv.plugin, dir, m, refresh)
	klog.V(4).InfoS("MountVolume.SetUp succeeded", "pod", klog.KObj(pod), "volume", k.name, "path", m.Path)
	r.finish(k, false)
}

func (r *reconciler) tearDown(ctx context.Context, k volumeKey, mv mountedVolume) {
	r.m.actual.markTearingDown(k, true)
	err := r.m.cleanSubPaths(k.uid, k.name)
	if err == nil {
		err = mv.plugin.TearDown(ctx, k.uid, mv.dir)
	}
	if err != nil {
		klog.ErrorS(err, "UnmountVolume.TearDown failed", "podUID", k.uid, "volume", k.name, "plugin", mv.plugin.Name())
		r.m.actual.markTearingDown(k, false)
		r.finish(k, true)
		return
	}
	r.m.actual.markTornDown(k)
	klog.V(3).InfoS("UnmountVolume.TearDown succeeded", "podUID", k.uid, "volume", k.name, "plugin", mv.plugin.Name())
	r.finish(k, false)
}
