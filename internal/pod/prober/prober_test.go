package prober

import (
	"runtime"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/nodelet/nodelet/internal/testutil"
)

func (f *fixture) workers() map[workerKey]*worker {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	out := map[workerKey]*worker{}
	for k, w := range f.m.workers {
		out[k] = w
	}
	return out
}

func TestManagerRunsWorkersAndRemovePodStopsThem(t *testing.T) {
	f := newFixture(t)
	baseline := runtime.NumGoroutine()
	f.m.unit = 10 * time.Millisecond
	c := v1.Container{Name: "app", LivenessProbe: execProbe("alive"), ReadinessProbe: execProbe("ready")}
	sidecar := v1.Container{Name: "side", ReadinessProbe: execProbe("ready"), RestartPolicy: ptr.To(v1.ContainerRestartPolicyAlways)}
	plainInit := v1.Container{Name: "init", ReadinessProbe: execProbe("ready")}
	pod := probePod(c)
	pod.Spec.InitContainers = []v1.Container{plainInit, sidecar}
	f.running(pod, "app", "c1", time.Now())

	f.m.AddPod(pod)
	f.m.AddPod(pod)
	workers := f.workers()
	if len(workers) != 3 {
		t.Fatalf("%d workers, want 3 (app liveness+readiness, sidecar readiness; not the plain init container)", len(workers))
	}
	select {
	case uid := <-f.m.Updates():
		if uid != pod.UID {
			t.Fatalf("update for %s", uid)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no update after the readiness probe ran")
	}
	testutil.Eventually(t, "readiness", func() bool { return f.m.Ready(pod, "app", "containerd://c1") })
	testutil.Eventually(t, "periodic probes", func() bool { return f.exec.count("alive") >= 3 })

	f.m.RemovePod(pod)
	for key, w := range workers {
		select {
		case <-w.done:
		case <-time.After(5 * time.Second):
			t.Fatalf("worker %+v still running after RemovePod", key)
		}
	}
	if len(f.workers()) != 0 {
		t.Error("workers left after RemovePod")
	}
	if f.m.Ready(pod, "app", "containerd://c1") {
		t.Error("results kept after RemovePod")
	}
	f.updates()
	testutil.Eventually(t, "goroutines to end", func() bool { return runtime.NumGoroutine() <= baseline })
}

func TestReadyWakesWorkerForNewInstance(t *testing.T) {
	f := newFixture(t)
	f.m.unit = time.Hour // only a wake-up gets a second probe in
	pod := probePod(v1.Container{Name: "app", ReadinessProbe: execProbe("ready")})
	f.running(pod, "app", "c1", time.Now())
	f.m.AddPod(pod)
	t.Cleanup(func() { f.m.RemovePod(pod) })
	testutil.Eventually(t, "first instance ready", func() bool { return f.m.Ready(pod, "app", "c1") })

	f.running(pod, "app", "c2", time.Now())
	testutil.Eventually(t, "the new instance probed without waiting a period", func() bool { return f.m.Ready(pod, "app", "c2") })
}

func TestWorkerThatEndsItselfIsForgotten(t *testing.T) {
	f := newFixture(t)
	f.m.unit = 10 * time.Millisecond
	pod := probePod(v1.Container{Name: "app", ReadinessProbe: execProbe("ready")})
	f.status.set(pod.UID, v1.PodStatus{Phase: v1.PodSucceeded})
	f.m.AddPod(pod)
	w := f.workers()[workerKey{uid: pod.UID, container: "app", kind: readiness}]
	select {
	case <-w.done:
	case <-time.After(5 * time.Second):
		t.Fatal("worker of a finished pod did not stop")
	}
	if len(f.workers()) != 0 {
		t.Error("a stopped worker is still registered")
	}
}
