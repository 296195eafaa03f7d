package prober

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

func TestReadinessDefaultsToNotReadyUntilSuccess(t *testing.T) {
	f := newFixture(t)
	c := v1.Container{Name: "app", ReadinessProbe: execProbe("ready")}
	pod := probePod(c)
	w := f.worker(pod, "app", readiness)
	if f.m.Ready(pod, "app", "containerd://c1") {
		t.Fatal("ready before any probe ran")
	}
	f.running(pod, "app", "c1", time.Now())
	f.exec.reply("ready", execReply{code: 1, output: "not yet"})
	w.doProbe(context.Background())
	if f.m.Ready(pod, "app", "containerd://c1") {
		t.Fatal("ready after a failed probe")
	}
	if evs := f.events(); !hasEvent(evs, "Warning Unhealthy Readiness probe failed: not yet") {
		t.Errorf("events %q lack the Unhealthy event", evs)
	}
	f.updates()
	f.exec.reply("ready", execReply{})
	w.doProbe(context.Background())
	if !f.m.Ready(pod, "app", "containerd://c1") || !f.m.Ready(pod, "app", "c1") {
		t.Fatal("not ready after a successful probe")
	}
	if got := f.updates(); !reflect.DeepEqual(got, []types.UID{pod.UID}) {
		t.Errorf("updates %v, want one for the pod", got)
	}
	// The result belongs to that instance; a new one starts not ready.
	if f.m.Ready(pod, "app", "containerd://c2") {
		t.Error("a new container instance is ready before its first probe")
	}
}

func TestNoProbesMeansReadyAndStarted(t *testing.T) {
	f := newFixture(t)
	pod := probePod(v1.Container{Name: "app"})
	if !f.m.Ready(pod, "app", "containerd://c1") || !f.m.Started(pod, "app", "containerd://c1") {
		t.Error("a container without probes must be ready and started")
	}
}

func TestReadinessThresholds(t *testing.T) {
	f := newFixture(t)
	p := execProbe("ready")
	p.SuccessThreshold, p.FailureThreshold = 2, 3
	pod := probePod(v1.Container{Name: "app", ReadinessProbe: p})
	w := f.worker(pod, "app", readiness)
	f.running(pod, "app", "c1", time.Now())

	steps := []struct {
		code      int32
		wantReady bool
	}{
		{0, false}, {0, true}, // two successes needed
		{1, true}, {1, true}, {1, false}, // three failures needed
		{0, false}, {1, false}, {0, false}, {0, true}, // a failure resets the success run
	}
	for i, s := range steps {
		f.exec.reply("ready", execReply{code: s.code})
		w.doProbe(context.Background())
		if got := f.m.Ready(pod, "app", "c1"); got != s.wantReady {
			t.Fatalf("step %d (exit %d): ready %v, want %v", i, s.code, got, s.wantReady)
		}
	}
	if n := len(f.updates()); n != 4 {
		t.Errorf("%d updates, want 4: the instance's first (not ready) result, ready, not ready, ready", n)
	}
	if f.kill.all() != nil {
		t.Error("readiness failures must not kill")
	}
}

func TestLivenessKillsOncePerFailureStreak(t *testing.T) {
	f := newFixture(t)
	p := execProbe("alive")
	p.FailureThreshold = 2
	pod := probePod(v1.Container{Name: "app", LivenessProbe: p})
	w := f.worker(pod, "app", liveness)
	f.running(pod, "app", "c1", time.Now())
	f.exec.reply("alive", execReply{code: 1, output: "dead"})

	for range 5 {
		w.doProbe(context.Background())
	}
	want := []killCall{{containerID: "containerd://c1", grace: 30, message: "Container app failed liveness probe, will be restarted"}}
	if got := f.kill.all(); !reflect.DeepEqual(got, want) {
		t.Fatalf("kills %+v, want %+v", got, want)
	}
	if n := f.exec.count("alive"); n != 2 {
		t.Errorf("%d probes ran, want 2: none while the killed instance is still reported", n)
	}
	if evs := f.events(); !hasEvent(evs, "Warning Unhealthy Liveness probe failed: dead") {
		t.Errorf("events %q lack the Unhealthy event", evs)
	}

	// The restarted instance is probed afresh and killed again after its own streak.
	f.running(pod, "app", "c2", time.Now())
	w.doProbe(context.Background())
	if len(f.kill.all()) != 1 {
		t.Fatal("killed after one failure of the new instance")
	}
	w.doProbe(context.Background())
	if got := f.kill.all(); len(got) != 2 || got[1].containerID != "containerd://c2" {
		t.Fatalf("kills %+v, want a second one for c2", got)
	}
}

func TestLivenessKillGracePeriod(t *testing.T) {
	tests := []struct {
		name       string
		probeGrace *int64
		podGrace   *int64
		want       int64
	}{
		{"probe-level grace wins", ptr.To[int64](5), ptr.To[int64](30), 5},
		{"pod grace otherwise", nil, ptr.To[int64](30), 30},
		{"runtime default when neither", nil, nil, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			p := execProbe("alive")
			p.FailureThreshold, p.TerminationGracePeriodSeconds = 1, tt.probeGrace
			pod := probePod(v1.Container{Name: "app", LivenessProbe: p})
			pod.Spec.TerminationGracePeriodSeconds = tt.podGrace
			w := f.worker(pod, "app", liveness)
			f.running(pod, "app", "c1", time.Now())
			f.exec.reply("alive", execReply{code: 1})
			w.doProbe(context.Background())
			if got := f.kill.all(); len(got) != 1 || got[0].grace != tt.want {
				t.Fatalf("kills %+v, want one with grace %d", got, tt.want)
			}
		})
	}
}

func TestFailedKillIsRetriedAtTheNextFailure(t *testing.T) {
	f := newFixture(t)
	p := execProbe("alive")
	p.FailureThreshold = 2
	pod := probePod(v1.Container{Name: "app", LivenessProbe: p})
	w := f.worker(pod, "app", liveness)
	f.running(pod, "app", "c1", time.Now())
	f.exec.reply("alive", execReply{code: 1})
	f.kill.err = errors.New("runtime down")
	w.doProbe(context.Background())
	w.doProbe(context.Background())
	w.doProbe(context.Background())
	if n := len(f.kill.all()); n != 2 {
		t.Errorf("%d kill attempts, want 2 (at the threshold, then at the next failure)", n)
	}
}

func TestStartupGatesLivenessAndReadiness(t *testing.T) {
	f := newFixture(t)
	c := v1.Container{Name: "app", StartupProbe: execProbe("started"), LivenessProbe: execProbe("alive"), ReadinessProbe: execProbe("ready")}
	c.StartupProbe.FailureThreshold = 10
	pod := probePod(c)
	sw, lw, rw := f.worker(pod, "app", startup), f.worker(pod, "app", liveness), f.worker(pod, "app", readiness)
	f.running(pod, "app", "c1", time.Now())
	f.exec.reply("started", execReply{code: 1})
	f.exec.reply("alive", execReply{code: 1})

	sw.doProbe(context.Background())
	lw.doProbe(context.Background())
	rw.doProbe(context.Background())
	if f.exec.count("alive") != 0 || f.exec.count("ready") != 0 {
		t.Fatal("liveness or readiness ran before the startup probe passed")
	}
	if f.m.Started(pod, "app", "c1") || f.m.Ready(pod, "app", "c1") {
		t.Fatal("started or ready before the startup probe passed")
	}
	f.updates()

	f.exec.reply("started", execReply{})
	sw.doProbe(context.Background())
	if !f.m.Started(pod, "app", "c1") {
		t.Fatal("not started after the startup probe passed")
	}
	if len(f.updates()) == 0 {
		t.Error("no update when the container started")
	}
	sw.doProbe(context.Background())
	if n := f.exec.count("started"); n != 2 {
		t.Errorf("startup probe ran %d times, want 2: it stops once passed", n)
	}
	rw.doProbe(context.Background())
	lw.doProbe(context.Background())
	if f.exec.count("alive") != 1 || f.exec.count("ready") != 1 {
		t.Fatal("liveness and readiness did not run after startup")
	}
	if !f.m.Ready(pod, "app", "c1") {
		t.Error("not ready after startup and readiness passed")
	}
}

func TestStartupFailureKills(t *testing.T) {
	f := newFixture(t)
	c := v1.Container{Name: "app", StartupProbe: execProbe("started")}
	c.StartupProbe.FailureThreshold = 2
	pod := probePod(c)
	w := f.worker(pod, "app", startup)
	f.running(pod, "app", "c1", time.Now())
	f.exec.reply("started", execReply{code: 1, output: "booting"})
	w.doProbe(context.Background())
	w.doProbe(context.Background())
	want := []killCall{{containerID: "containerd://c1", grace: 30, message: "Container app failed startup probe, will be restarted"}}
	if got := f.kill.all(); !reflect.DeepEqual(got, want) {
		t.Fatalf("kills %+v, want %+v", got, want)
	}
	if evs := f.events(); !hasEvent(evs, "Warning Unhealthy Startup probe failed: booting") {
		t.Errorf("events %q", evs)
	}
}

func TestInitialDelay(t *testing.T) {
	f := newFixture(t)
	f.m.unit = time.Hour
	p := execProbe("ready")
	p.InitialDelaySeconds = 1
	pod := probePod(v1.Container{Name: "app", ReadinessProbe: p})
	w := f.worker(pod, "app", readiness)
	f.running(pod, "app", "c1", time.Now())
	w.doProbe(context.Background())
	if f.exec.count("ready") != 0 {
		t.Fatal("probed before initialDelaySeconds passed")
	}
	f.running(pod, "app", "c1", time.Now().Add(-2*time.Hour))
	w.doProbe(context.Background())
	if f.exec.count("ready") != 1 {
		t.Fatal("not probed after initialDelaySeconds")
	}
}

func TestWorkerStopsWhenContainerIsDoneForGood(t *testing.T) {
	f := newFixture(t)
	pod := probePod(v1.Container{Name: "app", ReadinessProbe: execProbe("ready")})
	w := f.worker(pod, "app", readiness)
	f.running(pod, "app", "c1", time.Now())
	f.exec.reply("ready", execReply{})
	w.doProbe(context.Background())
	f.exited(pod, "app", "c1")
	if !w.doProbe(context.Background()) {
		t.Fatal("worker stopped although restartPolicy Always restarts the container")
	}
	if f.m.Ready(pod, "app", "c1") {
		t.Error("a stopped container stays ready")
	}
	pod.Spec.RestartPolicy = v1.RestartPolicyNever
	if w.doProbe(context.Background()) {
		t.Error("worker keeps running for a container that never restarts")
	}
	st, _ := f.status.get(pod.UID)
	st.Phase = v1.PodSucceeded
	f.status.set(pod.UID, st)
	if w.doProbe(context.Background()) {
		t.Error("worker keeps running for a finished pod")
	}
}

func TestSidecarWorkerOutlivesItsContainerUnderNever(t *testing.T) {
	f := newFixture(t)
	always := v1.ContainerRestartPolicyAlways
	pod := probePod(v1.Container{Name: "app"})
	pod.Spec.RestartPolicy = v1.RestartPolicyNever
	pod.Spec.InitContainers = []v1.Container{{Name: "proxy", RestartPolicy: &always, ReadinessProbe: execProbe("ready")}}
	w := f.worker(pod, "proxy", readiness)
	f.running(pod, "proxy", "c1", time.Now())
	f.exec.reply("ready", execReply{})
	w.doProbe(context.Background())
	if !f.m.Ready(pod, "proxy", "c1") {
		t.Fatal("sidecar not ready after its readiness probe passed")
	}
	f.exited(pod, "proxy", "c1")
	if !w.doProbe(context.Background()) {
		t.Error("worker stopped although a sidecar restarts under restartPolicy Never too")
	}

	// A failing liveness probe kills the sidecar with upstream's message for init containers.
	pod.Spec.InitContainers[0].LivenessProbe = execProbe("alive")
	lw := f.worker(pod, "proxy", liveness)
	f.running(pod, "proxy", "c2", time.Now())
	f.exec.reply("alive", execReply{code: 1})
	for range 3 {
		lw.doProbe(context.Background())
	}
	if got := f.kill.all(); len(got) != 1 || got[0].message != "Init container proxy failed liveness probe" {
		t.Errorf("kills %+v, want one with the init container message", got)
	}
}

func TestDeletedPodStopsLivenessAndStartupKeepsReadiness(t *testing.T) {
	f := newFixture(t)
	pod := probePod(v1.Container{Name: "app", LivenessProbe: execProbe("alive"), ReadinessProbe: execProbe("ready"),
		StartupProbe: execProbe("started")})
	lw, rw, sw := f.worker(pod, "app", liveness), f.worker(pod, "app", readiness), f.worker(pod, "app", startup)
	f.running(pod, "app", "c1", time.Now())
	deleting := pod.DeepCopy()
	now := metav1.Now()
	deleting.DeletionTimestamp = &now
	f.m.AddPod(deleting) // hands the new object to the registered workers
	f.exec.reply("alive", execReply{code: 1})
	f.exec.reply("started", execReply{code: 1})
	for range 3 {
		sw.doProbe(context.Background())
		lw.doProbe(context.Background())
	}
	if f.exec.count("alive") != 0 || f.exec.count("started") != 0 || len(f.kill.all()) != 0 {
		t.Error("liveness or startup ran or killed during deletion")
	}
	if !f.m.Started(pod, "app", "c1") {
		t.Error("a pod being deleted is held back by its startup probe")
	}
	if !rw.doProbe(context.Background()) || f.exec.count("ready") != 1 {
		t.Error("readiness stopped for a pod being deleted")
	}
}

func TestProbeErrorsAreNotResults(t *testing.T) {
	f := newFixture(t)
	pod := probePod(v1.Container{Name: "app", ReadinessProbe: execProbe("ready")})
	w := f.worker(pod, "app", readiness)
	f.running(pod, "app", "c1", time.Now())
	f.exec.reply("ready", execReply{})
	w.doProbe(context.Background())
	f.exec.reply("ready", execReply{err: errors.New("runtime hiccup")})
	for range 5 {
		w.doProbe(context.Background())
	}
	if !f.m.Ready(pod, "app", "c1") {
		t.Error("probe errors turned the container not ready")
	}
	if evs := f.events(); !hasEvent(evs, "Warning Unhealthy Readiness probe errored: runtime hiccup") {
		t.Errorf("events %q", evs)
	}
	got := f.metricCalls()
	if got[0] != (metricCall{"Readiness", "successful", "app"}) || got[1] != (metricCall{"Readiness", "unknown", "app"}) {
		t.Errorf("metrics %+v", got)
	}
}
