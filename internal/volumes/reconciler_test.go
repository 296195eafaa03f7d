package volumes

import (
	"context"
	"slices"
	"testing"
	"time"
)

// The pod's volumes are set up outside the caller, and handed out.
func TestWaitForAttachAndMountSetsUpVolumes(t *testing.T) {
	e := newTestEnv(t, t.TempDir())
	e.run(t)
	pod := podWith("u1", "data", "cache")
	if err := e.m.WaitForAttachAndMount(t.Context(), pod); err != nil {
		t.Fatal(err)
	}
	path, ro, err := e.m.HostPath(pod, "data")
	if err != nil || ro || path != e.volumeDir("u1", "data") {
		t.Fatalf("HostPath data = %q %v %v", path, ro, err)
	}
	if _, _, err := e.m.HostPath(pod, "nope"); err == nil {
		t.Error("an undeclared volume was handed out")
	}
	if e.plugin.setUpsOf("data") != 1 {
		t.Errorf("data set up %d times", e.plugin.setUpsOf("data"))
	}
}

// A pod handed back keeps its volumes while its containers may still run; they go once the
// containers are gone.
func TestTearDownOnlyAfterContainersAreGone(t *testing.T) {
	e := newTestEnv(t, t.TempDir())
	e.run(t)
	pod := podWith("u1", "data")
	if err := e.m.WaitForAttachAndMount(t.Context(), pod); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	if err := e.m.TearDownPod(ctx, "u1"); err == nil {
		t.Fatal("TearDownPod returned while the containers may run")
	}
	if got := e.plugin.tornDown(); len(got) != 0 {
		t.Fatalf("torn down %v while the containers may run", got)
	}
	e.pods.setGone("u1")
	if err := e.m.TearDownPod(t.Context(), "u1"); err != nil {
		t.Fatal(err)
	}
	if got := e.plugin.tornDown(); !slices.Equal(got, []string{e.volumeDir("u1", "data")}) {
		t.Errorf("torn down %v", got)
	}
	if _, _, err := e.m.HostPath(pod, "data"); err == nil {
		t.Error("a torn-down volume is still handed out")
	}
}

// A failed SetUp posts upstream's FailedMount event and is retried after 500ms, 1s, 2s ...
// and not before.
func TestFailedSetUpRetriesWithBackOff(t *testing.T) {
	e := newTestEnv(t, t.TempDir())
	e.plugin.failNext(3)
	pod := podWith("u1", "data")
	e.m.want(t.Context(), pod)
	e.reconcile()
	want := `Warning FailedMount MountVolume.SetUp failed for volume "data" : disk on fire`
	if got := events(e.recorder); len(got) != 1 || got[0] != want {
		t.Fatalf("events %q, want %q", got, want)
	}
	for _, wait := range []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second} {
		attempts := e.plugin.setUpsOf("data")
		e.clock.Step(wait - time.Millisecond)
		e.reconcile()
		if e.plugin.setUpsOf("data") != attempts {
			t.Fatalf("retried before %v", wait)
		}
		e.clock.Step(time.Millisecond)
		e.reconcile()
		if e.plugin.setUpsOf("data") != attempts+1 {
			t.Fatalf("not retried after %v", wait)
		}
	}
	if _, _, err := e.m.HostPath(pod, "data"); err != nil {
		t.Errorf("after the fourth attempt: %v", err)
	}
	if len(e.m.rec.retries) != 0 {
		t.Errorf("back-off kept after success: %v", e.m.rec.retries)
	}
}

// Every sync of a pod sets its Refresher volumes up again (carrying object updates), and
// only those.
func TestSyncRefreshesRefresherVolumes(t *testing.T) {
	for _, refresh := range []bool{true, false} {
		e := newTestEnv(t, t.TempDir())
		e.plugin.refresh = refresh
		pod := podWith("u1", "data")
		e.m.want(t.Context(), pod)
		e.reconcile()
		e.m.want(t.Context(), pod)
		e.reconcile()
		e.reconcile()
		want := 1
		if refresh {
			want = 2
		}
		if got := e.plugin.setUpsOf("data"); got != want {
			t.Errorf("refresh=%v: %d SetUps for two syncs, want %d", refresh, got, want)
		}
	}
}
