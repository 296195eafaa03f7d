package stats

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/nodelet/nodelet/internal/testutil"
)

// meterEnv runs a volume meter over a settable pod list, counting the walks its du makes.
type meterEnv struct {
	m     *volumeMeter
	walks atomic.Int64
	block atomic.Pointer[chan struct{}] // when set, each walk waits for it to close (or its context to end)

	mu   sync.Mutex
	pods []*v1.Pod
}

func newMeterEnv(t *testing.T, period time.Duration) *meterEnv {
	e := &meterEnv{}
	e.m = newVolumeMeter(t.TempDir(), period, func() []*v1.Pod {
		e.mu.Lock()
		defer e.mu.Unlock()
		return append([]*v1.Pod(nil), e.pods...)
	})
	e.m.du = func(ctx context.Context, dir string) (usage, error) {
		e.walks.Add(1)
		if block := e.block.Load(); block != nil {
			select {
			case <-*block:
			case <-ctx.Done():
				return usage{}, ctx.Err()
			}
		}
		return usage{bytes: 4096, inodes: 7}, nil
	}
	return e
}

func (e *meterEnv) setPods(pods ...*v1.Pod) {
	e.mu.Lock()
	e.pods = pods
	e.mu.Unlock()
}

// run starts the meter and returns a stop that waits for Run to return.
func (e *meterEnv) run(t *testing.T) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.m.Run(ctx) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("Run did not return after its context ended")
		}
	}
	t.Cleanup(stop)
	return stop
}

// A pod's emptyDirs are walked in the background as soon as it appears, once each per
// period; any number of concurrent readers cause no further walk. A pod without an emptyDir
// is never walked.
func TestVolumeMeterWalksOncePerPeriodWhateverTheReaders(t *testing.T) {
	e := newMeterEnv(t, time.Hour)
	web := testPod("web", "app")
	web.Spec.Volumes = append(web.Spec.Volumes, volume("cache"), volume("tmp"))
	e.setPods(web, testPod("plain", "app"))
	e.run(t)
	testutil.WaitFor(t, 10*time.Second, "both volumes measured", func() (bool, string) {
		_, a := e.m.get(web.UID, "cache")
		_, b := e.m.get(web.UID, "tmp")
		return a && b, "not yet"
	})
	var wg sync.WaitGroup
	for range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if f, ok := e.m.get(web.UID, "cache"); !ok || f.inodes != 7 || f.at.IsZero() {
				t.Errorf("figures %+v %v", f, ok)
			}
		}()
	}
	wg.Wait()
	time.Sleep(100 * time.Millisecond)
	if n := e.walks.Load(); n != 2 {
		t.Errorf("%d walks, want one per volume", n)
	}
}

// A walk longer than the period holds up only that pod's next figures: readers get the last
// ones meanwhile, and no second walk of the pod starts.
func TestVolumeMeterSlowWalkDoesNotPileUp(t *testing.T) {
	e := newMeterEnv(t, 10*time.Millisecond)
	pod := testPod("slow", "app")
	pod.Spec.Volumes = append(pod.Spec.Volumes, volume("big"))
	e.setPods(pod)
	release := make(chan struct{})
	e.block.Store(&release)
	e.run(t)
	testutil.WaitFor(t, 10*time.Second, "the first walk started", func() (bool, string) { return e.walks.Load() == 1, "" })
	time.Sleep(200 * time.Millisecond) // twenty periods
	if n := e.walks.Load(); n != 1 {
		t.Fatalf("%d walks while the first had not ended", n)
	}
	if _, ok := e.m.get(pod.UID, "big"); ok {
		t.Fatal("figures before any walk ended")
	}
	close(release)
	testutil.WaitFor(t, 10*time.Second, "figures after the walk", func() (bool, string) {
		_, ok := e.m.get(pod.UID, "big")
		return ok, ""
	})
}

// A pod that goes away stops being walked and its figures are forgotten; when the meter stops,
// Run returns even while a walk is under way.
func TestVolumeMeterForgetsPodsGoneAndStops(t *testing.T) {
	e := newMeterEnv(t, 10*time.Millisecond)
	gone, stays := testPod("gone", "app"), testPod("stays", "app")
	gone.Spec.Volumes = append(gone.Spec.Volumes, volume("v"))
	stays.Spec.Volumes = append(stays.Spec.Volumes, volume("v"))
	e.setPods(gone, stays)
	stop := e.run(t)
	testutil.WaitFor(t, 10*time.Second, "both pods measured", func() (bool, string) {
		_, a := e.m.get(gone.UID, "v")
		_, b := e.m.get(stays.UID, "v")
		return a && b, ""
	})
	e.setPods(stays)
	testutil.WaitFor(t, 3*meterReconcilePeriod, "the gone pod forgotten", func() (bool, string) {
		_, ok := e.m.get(gone.UID, "v")
		return !ok, ""
	})
	e.m.mu.Lock()
	n := len(e.m.meters)
	e.m.mu.Unlock()
	if n != 1 {
		t.Errorf("%d pods measured, want 1", n)
	}
	hang := make(chan struct{}) // the next walk hangs until its context ends
	e.block.Store(&hang)
	time.Sleep(50 * time.Millisecond)
	stop()
}
