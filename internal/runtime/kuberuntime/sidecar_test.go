package kuberuntime

import (
	"context"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"

	"github.com/nodelet/nodelet/internal/runtime/container"
	"github.com/nodelet/nodelet/internal/testutil"
)

func sidecarCtr(name string) v1.Container {
	c := ctr(name, "sleep", "1d")
	c.RestartPolicy = ptr.To(v1.ContainerRestartPolicyAlways)
	return c
}

// startupResults stands for the prober's startup results: started holds the container names
// whose current instance passed.
type startupResults struct {
	mu      sync.Mutex
	started map[string]bool
}

func (s *startupResults) set(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.started[name] = true
}

func (s *startupResults) get(_ *v1.Pod, name, _ string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.started[name]
}

func TestSidecarStartsNextInitOnlyOnceStarted(t *testing.T) {
	probes := &startupResults{started: map[string]bool{}}
	e := newTestEnv(t, func(o *Options) { o.Started = probes.get })
	pod := newPod("mesh", ctr("app", "sleep", "1d"))
	proxy := sidecarCtr("proxy")
	proxy.StartupProbe = &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"true"}}}}
	pod.Spec.InitContainers = []v1.Container{proxy, ctr("setup", "true"), sidecarCtr("logger")}

	e.sync(pod)
	e.sync(pod) // running, but its startup probe has not passed
	if n := len(e.fake.Containers()); n != 1 {
		t.Fatalf("%d containers before the proxy's startup probe passed, want only the proxy", n)
	}
	probes.set("proxy")
	e.sync(pod)
	e.running("setup")
	if len(e.containersNamed("logger"))+len(e.containersNamed("app")) != 0 {
		t.Fatal("started more than the next init container")
	}
	e.exit("setup", 0)
	e.sync(pod)
	e.running("logger") // no startup probe: started once running
	if len(e.containersNamed("app")) != 0 {
		t.Fatal("app started with the logger sidecar")
	}
	e.sync(pod)
	e.running("app")
	e.running("proxy")
	if len(e.containersNamed("setup")) != 1 || len(e.containersNamed("proxy")) != 1 {
		t.Error("an init container ran twice")
	}
}

func TestSidecarRestartsBesideAppWhateverThePolicy(t *testing.T) {
	e := newTestEnv(t)
	pod := newPod("mesh", ctr("app", "sleep", "1d"))
	pod.Spec.RestartPolicy = v1.RestartPolicyNever
	pod.Spec.InitContainers = []v1.Container{sidecarCtr("proxy")}
	e.sync(pod)
	e.exit("proxy", 1) // before the app started: restarted too, the pod goes on
	e.sync(pod)
	if len(e.containersNamed("app")) != 0 {
		t.Fatal("app started while its sidecar was down")
	}
	e.sync(pod)
	app := e.running("app")

	e.exit("proxy", 1)
	e.clock.Step(time.Minute) // past this crash's back-off
	e.sync(pod)
	if c := e.running("proxy"); c.Config.Metadata.Attempt != 2 {
		t.Errorf("restarted sidecar attempt %d, want 2", c.Config.Metadata.Attempt)
	}
	if e.running("app").ID != app.ID {
		t.Error("the app container was restarted with its sidecar")
	}

	// A second crash right away waits for its own back-off.
	e.exit("proxy", 1)
	res := e.sync(pod)
	if w := res.Waiting["proxy"]; w.Reason != ReasonCrashLoopBackOff {
		t.Errorf("waiting %+v, want CrashLoopBackOff for proxy", res.Waiting)
	}
	if _, ok := res.Waiting["app"]; ok || e.running("app").ID != app.ID {
		t.Error("the app was held back or restarted by its sidecar's back-off")
	}
}

func TestPodStopsSidecarsOnceAppIsDone(t *testing.T) {
	e := newTestEnv(t)
	pod := newPod("job", ctr("app", "true"))
	pod.Spec.RestartPolicy = v1.RestartPolicyOnFailure
	pod.Spec.InitContainers = []v1.Container{sidecarCtr("proxy")}
	e.sync(pod)
	e.sync(pod)
	e.exit("app", 1)
	e.sync(pod) // OnFailure: the app comes back, the sidecar stays
	e.running("proxy")
	e.exit("app", 0)
	if res := e.sync(pod); res.Err != nil {
		t.Fatal(res.Err)
	}
	if c := e.containersNamed("proxy")[0]; c.State != runtimeapi.ContainerState_CONTAINER_EXITED {
		t.Errorf("sidecar %s after the app succeeded, want exited", c.State)
	}
	if sb := e.fake.Sandboxes()[0]; sb.State != runtimeapi.PodSandboxState_SANDBOX_NOTREADY {
		t.Errorf("sandbox %s, want stopped", sb.State)
	}
	e.sync(pod)
	if n, s := len(e.fake.Containers()), len(e.fake.Sandboxes()); n != 3 || s != 1 {
		t.Errorf("%d containers in %d sandboxes after completion, want nothing new", n, s)
	}
}

func TestKillPodStopsSidecarsAfterAppsInReverseOrder(t *testing.T) {
	e := newTestEnv(t)
	app := ctr("app", "sleep", "1d")
	app.Lifecycle = &v1.Lifecycle{PreStop: &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"drain"}}}}
	pod := newPod("mesh", app, ctr("web", "sleep", "1d"))
	pod.Spec.InitContainers = []v1.Container{sidecarCtr("first"), ctr("setup", "true"), sidecarCtr("second")}
	e.sync(pod)
	e.sync(pod)
	e.exit("setup", 0)
	e.sync(pod)
	e.sync(pod)
	e.running("app")

	inPreStop, release := make(chan struct{}), make(chan struct{})
	e.fake.SetExecHandler(func(string, []string) ([]byte, int32, error) {
		close(inPreStop)
		<-release
		return nil, 0, nil
	})
	done := make(chan error)
	go func() { done <- e.mgr.KillPod(context.Background(), pod, nil, 30) }()
	<-inPreStop
	testutil.Eventually(t, "web stopped", func() bool { return e.containersNamed("web")[0].State == runtimeapi.ContainerState_CONTAINER_EXITED })
	for _, name := range []string{"first", "second"} {
		if c := e.containersNamed(name)[0]; c.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
			t.Errorf("sidecar %s %s while the app's preStop runs", name, c.State)
		}
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	finished := func(name string) time.Time { return e.containersNamed(name)[0].FinishedAt }
	if !finished("app").Before(finished("second")) || !finished("second").Before(finished("first")) {
		t.Errorf("stopped app %v, second %v, first %v: want app, then second, then first",
			finished("app"), finished("second"), finished("first"))
	}
	if c := e.containersNamed("first")[0]; c.StopTimeout < 2 || c.StopTimeout > 30 {
		t.Errorf("sidecar stop timeout %d, want what is left of 30s", c.StopTimeout)
	}
}

// Sidecars whose preStop hooks outlast the grace period stop together when it ends, each with
// the 2 s minimum, not one after the other in reverse order (upstream waits for a turn only
// with grace left).
func TestSidecarsPastTheirGraceStopTogether(t *testing.T) {
	e := newTestEnv(t)
	hook := &v1.Lifecycle{PreStop: &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"loop", "forever"}}}}
	first, second := sidecarCtr("first"), sidecarCtr("second")
	first.Lifecycle, second.Lifecycle = hook, hook
	pod := newPod("mesh", ctr("app", "sleep", "1d"))
	pod.Spec.InitContainers = []v1.Container{first, second}
	for range 3 {
		e.sync(pod)
	}
	e.running("app")
	release := make(chan struct{})
	defer close(release)
	e.fake.SetExecHandler(func(string, []string) ([]byte, int32, error) {
		<-release // the hooks loop until their containers die
		return nil, 137, nil
	})
	e.fake.SetStopIgnoresTerm(true) // each stop takes its 2 s
	start := time.Now()
	if err := e.mgr.KillPod(context.Background(), pod, nil, 2); err != nil {
		t.Fatal(err)
	}
	// 2 s of hooks, then both 2 s stops side by side; one after the other would take 6 s.
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("KillPod took %v: the sidecars stopped one after the other", took)
	}
}

func TestKillOrderWaitEndsWithTheGracePeriod(t *testing.T) {
	pod := newPod("mesh", ctr("app"))
	pod.Spec.InitContainers = []v1.Container{sidecarCtr("proxy")}
	toStop := []*container.ContainerStatus{{Name: "app"}, {Name: "proxy"}}
	o := newKillOrder(pod, toStop)
	if waited := o.wait("app", time.Hour); waited != 0 {
		t.Errorf("app waited %v, want no wait", waited)
	}
	if waited := o.wait("proxy", 20*time.Millisecond); waited < 20*time.Millisecond {
		t.Errorf("proxy waited %v for a running app, want its whole limit", waited)
	}
	o.done("app")
	if waited := o.wait("proxy", time.Hour); waited >= time.Hour {
		t.Error("proxy still waits once the app stopped")
	}
	if newKillOrder(newPod("plain", ctr("app")), toStop) != nil {
		t.Error("a pod without sidecars gets a kill order")
	}
}
