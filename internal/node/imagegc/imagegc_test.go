package imagegc

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodelet/nodelet/internal/runtime/container"
)

// fakeImages is a runtime.ImageGarbageSource with a settable image list and containers.
type fakeImages struct {
	mu      sync.Mutex
	images  []container.Image
	inUse   []string
	removed []string
	failRm  map[string]bool
	listErr error
}

func (f *fakeImages) ImagesInUse(context.Context) ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.inUse, nil
}

func (f *fakeImages) ListImages(context.Context) ([]container.Image, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.listErr != nil {
		return nil, f.listErr
	}
	var out []container.Image
	for _, img := range f.images {
		if !contains(f.removed, img.ID) {
			out = append(out, img)
		}
	}
	return out, nil
}

func (f *fakeImages) RemoveImage(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failRm[id] {
		return errors.New("image is busy")
	}
	f.removed = append(f.removed, id)
	return nil
}

func (f *fakeImages) ImageFsMountpoint(context.Context) (string, error) { return "/images", nil }

// use sets the image references the runtime's containers hold.
func (f *fakeImages) use(refs ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.inUse = refs
}

func (f *fakeImages) removedIDs() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.removed...)
}

// collected reads kubelet_image_garbage_collected_total{reason}.
func collected(t *testing.T, reason string) float64 {
	t.Helper()
	var m dto.Metric
	if err := collectedImages.WithLabelValues(reason).Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func img(id string, size uint64, tags ...string) container.Image {
	return container.Image{ID: id, RepoTags: tags, Size: size}
}

type env struct {
	gc    *ImageGC
	rt    *fakeImages
	clock *clocktesting.FakeClock
	rec   *record.FakeRecorder
	disk  struct{ capacity, available int64 }
}

func newEnv(t *testing.T, policy Policy, images ...container.Image) *env {
	t.Helper()
	e := &env{rt: &fakeImages{images: images}, rec: record.NewFakeRecorder(20),
		clock: clocktesting.NewFakeClock(time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC))}
	e.disk.capacity, e.disk.available = 1000, 500
	g, err := New(Options{
		Policy: policy, Runtime: e.rt, Recorder: e.rec, KeepImages: []string{"example.com/sandbox:1"},
		NodeRef: &v1.ObjectReference{Kind: "Node", Name: "node-1", UID: "node-1"}, Clock: e.clock,
		StatFS: func(path string) (int64, int64, error) {
			if path != "/images" {
				return 0, 0, fmt.Errorf("unexpected path %s", path)
			}
			return e.disk.capacity, e.disk.available, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	e.gc = g
	return e
}

var defaultPolicy = Policy{HighThresholdPercent: 85, LowThresholdPercent: 80, MinAge: 2 * time.Minute}

func (e *env) detect(t *testing.T) {
	t.Helper()
	if _, err := e.gc.detect(context.Background(), e.clock.Now()); err != nil {
		t.Fatal(err)
	}
}

func (e *env) events() []string {
	var out []string
	for {
		select {
		case ev := <-e.rec.Events:
			out = append(out, ev)
		default:
			return out
		}
	}
}

func wantIDs(t *testing.T, got []string, want ...string) {
	t.Helper()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("removed %v, want %v", got, want)
	}
}

func TestBelowHighThresholdNothingIsRemoved(t *testing.T) {
	e := newEnv(t, defaultPolicy, img("sha256:a", 100, "a:1"))
	e.detect(t)
	e.clock.Step(time.Hour)
	e.disk.available = 160 // 84% used
	if err := e.gc.GarbageCollect(context.Background()); err != nil {
		t.Fatal(err)
	}
	wantIDs(t, e.rt.removedIDs())
}

func TestFreesDownToLowThresholdLeastRecentlyUsedFirst(t *testing.T) {
	e := newEnv(t, defaultPolicy,
		img("sha256:a", 60, "a:1"), img("sha256:b", 60, "b:1"), img("sha256:c", 60, "c:1"), img("sha256:d", 60, "d:1"))
	before := collected(t, reasonSpace)
	e.rt.use("sha256:a", "b:1") // by image ID and by tag
	e.detect(t)
	e.clock.Step(time.Minute)
	e.rt.use("b:1")
	e.detect(t)
	e.clock.Step(5 * time.Minute)
	e.rt.use()
	e.disk.available = 100 // 90% used: free 1000*20% - 100 = 100 bytes

	if err := e.gc.GarbageCollect(context.Background()); err != nil {
		t.Fatal(err)
	}
	// Never-used c and d first (detected together: by ID), then a (used before b); 120 ≥ 100.
	wantIDs(t, e.rt.removedIDs(), "sha256:c", "sha256:d")
	if got := collected(t, reasonSpace) - before; got != 2 {
		t.Errorf("space metric grew by %v, want 2", got)
	}

	e.rt.mu.Lock()
	e.rt.removed = nil
	e.rt.images = e.rt.images[:2]
	e.rt.mu.Unlock()
	if err := e.gc.GarbageCollect(context.Background()); err != nil {
		t.Fatal(err)
	}
	wantIDs(t, e.rt.removedIDs(), "sha256:a", "sha256:b")
}

func TestInUsePinnedAndSandboxImagesStay(t *testing.T) {
	pinned := img("sha256:pinned", 100, "registry.k8s.io/pause:3.9")
	pinned.Pinned = true
	digest := img("sha256:digest", 100)
	digest.RepoDigests = []string{"example.com/app@sha256:feed"}
	e := newEnv(t, defaultPolicy,
		img("sha256:used", 100, "used:1"), pinned, digest,
		img("sha256:pause", 100, "registry.k8s.io/pause:3.10"), img("sha256:kept", 100, "example.com/sandbox:1"),
		img("sha256:unused", 100, "unused:1"))
	e.rt.use("sha256:used", "example.com/app@sha256:feed")
	e.detect(t)
	e.clock.Step(time.Hour)
	e.disk.available = 0 // 100% used: wants 200 bytes

	err := e.gc.GarbageCollect(context.Background())
	want := "Failed to garbage collect required amount of images. Attempted to free 200 bytes, but only found 100 bytes eligible to free."
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v, want %q", err, want)
	}
	wantIDs(t, e.rt.removedIDs(), "sha256:unused")
	if evs := e.events(); len(evs) != 1 || evs[0] != "Warning FreeDiskSpaceFailed "+want {
		t.Errorf("events %q", evs)
	}
}

func TestMinAgeProtectsNewImages(t *testing.T) {
	e := newEnv(t, defaultPolicy, img("sha256:old", 100, "old:1"))
	e.detect(t)
	e.clock.Step(3 * time.Minute)
	e.rt.images = append(e.rt.images, img("sha256:new", 100, "new:1"))
	e.detect(t)
	e.clock.Step(time.Minute)
	e.disk.available = 0
	if err := e.gc.GarbageCollect(context.Background()); err == nil {
		t.Fatal("no error though too little could be freed")
	}
	wantIDs(t, e.rt.removedIDs(), "sha256:old")
}

func TestMaxAge(t *testing.T) {
	policy := defaultPolicy
	policy.MaxAge = 10 * time.Minute
	e := newEnv(t, policy, img("sha256:stale", 100, "stale:1"), img("sha256:recent", 100, "recent:1"))
	before := collected(t, reasonAge)
	e.detect(t)
	e.clock.Step(8 * time.Minute)
	e.rt.use("sha256:recent")
	e.detect(t)
	e.rt.use()
	if err := e.gc.GarbageCollect(context.Background()); err != nil {
		t.Fatal(err)
	}
	wantIDs(t, e.rt.removedIDs()) // nodelet has not run MaxAge yet

	e.clock.Step(3 * time.Minute) // 11m since start; recent last used 3m ago
	if err := e.gc.GarbageCollect(context.Background()); err != nil {
		t.Fatal(err)
	}
	wantIDs(t, e.rt.removedIDs(), "sha256:stale")
	if got := collected(t, reasonAge) - before; got != 1 {
		t.Errorf("age metric grew by %v, want 1", got)
	}
}

func TestDeleteUnusedImages(t *testing.T) {
	e := newEnv(t, defaultPolicy,
		img("sha256:a", 100, "a:1"), img("sha256:b", 100, "b:1"), img("sha256:used", 100, "used:1"),
		img("sha256:pause", 100, "registry.k8s.io/pause:3.10"))
	e.rt.use("used:1")
	e.detect(t)
	e.clock.Step(5 * time.Minute)
	e.rt.images = append(e.rt.images, img("sha256:young", 100, "young:1"))
	if err := e.gc.DeleteUnusedImages(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := e.rt.removedIDs()
	sort.Strings(got)
	wantIDs(t, got, "sha256:a", "sha256:b")
}

func TestFailedPassesAreReported(t *testing.T) {
	e := newEnv(t, defaultPolicy, img("sha256:a", 100, "a:1"))
	e.rt.listErr = errors.New("runtime down")
	ctx := context.Background()
	e.gc.runPass(ctx)
	if evs := e.events(); len(evs) != 0 {
		t.Fatalf("first failure reported: %q", evs)
	}
	e.gc.runPass(ctx)
	if evs := e.events(); len(evs) != 1 || evs[0] != "Warning ImageGCFailed runtime down" {
		t.Fatalf("events %q", evs)
	}
	e.rt.listErr = nil
	e.gc.runPass(ctx)
	e.rt.listErr = errors.New("runtime down")
	e.gc.runPass(ctx)
	if evs := e.events(); len(evs) != 0 {
		t.Fatalf("failure after a success reported: %q", evs)
	}
}

func TestInvalidCapacity(t *testing.T) {
	e := newEnv(t, defaultPolicy)
	e.disk.capacity = 0
	if err := e.gc.GarbageCollect(context.Background()); err == nil {
		t.Fatal("capacity 0 accepted")
	}
	if evs := e.events(); len(evs) != 1 || !strings.HasPrefix(evs[0], "Warning InvalidDiskCapacity ") {
		t.Errorf("events %q", evs)
	}
}

func TestDisabledSkipsPasses(t *testing.T) {
	e := newEnv(t, Policy{HighThresholdPercent: 100, LowThresholdPercent: 80}, img("sha256:a", 100, "a:1"))
	e.detect(t)
	e.clock.Step(time.Hour)
	e.disk.available = 0
	e.gc.runPass(context.Background())
	wantIDs(t, e.rt.removedIDs())
}

func TestNewValidatesThresholds(t *testing.T) {
	for _, p := range []Policy{
		{HighThresholdPercent: 101, LowThresholdPercent: 80},
		{HighThresholdPercent: 85, LowThresholdPercent: -1},
		{HighThresholdPercent: 70, LowThresholdPercent: 80},
	} {
		if _, err := New(Options{Policy: p, Runtime: &fakeImages{}}); err == nil {
			t.Errorf("policy %+v accepted", p)
		}
	}
}
