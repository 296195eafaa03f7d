package status

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/nodelet/nodelet/internal/runtime/container"
)

// sidecarPod has init containers sidecar "proxy" (with a startup probe), regular "setup"
// and the app "a".
func sidecarPod(policy v1.RestartPolicy) *v1.Pod {
	p := podWith(policy, []string{"proxy", "setup"}, "a")
	p.Spec.InitContainers[0].RestartPolicy = ptr.To(v1.ContainerRestartPolicyAlways)
	return p
}

// proberSays answers Started and Ready from name sets.
func proberSays(started []string, ready ...string) (func(string, string) bool, func(string, string) bool) {
	in := func(set []string) func(string, string) bool {
		return func(name, _ string) bool {
			for _, n := range set {
				if n == name {
					return true
				}
			}
			return false
		}
	}
	return in(started), in(ready)
}

func TestSidecarPhase(t *testing.T) {
	cases := []struct {
		name    string
		policy  v1.RestartPolicy
		rt      *container.PodStatus
		started []string
		waiting map[string]container.WaitingReason
		want    v1.PodPhase
	}{
		{"sidecar not started yet", v1.RestartPolicyAlways, rs(true, running("proxy", 0)), nil, nil, v1.PodPending},
		{"sidecar failing before the app started", v1.RestartPolicyNever, rs(true, exited("proxy", 1)),
			nil, map[string]container.WaitingReason{"proxy": {Reason: "CrashLoopBackOff"}}, v1.PodPending},
		{"regular init after the sidecar runs", v1.RestartPolicyAlways, rs(true, running("setup", 0), running("proxy", 0)),
			[]string{"proxy", "setup"}, nil, v1.PodPending},
		{"app runs beside the sidecar", v1.RestartPolicyAlways, rs(true, running("a", 0), exited("setup", 0), running("proxy", 0)),
			[]string{"proxy", "setup", "a"}, nil, v1.PodRunning},
		{"sidecar restarting after init", v1.RestartPolicyAlways, rs(true, running("a", 0), exited("setup", 0), running("proxy", 1), exited("proxy", 1)),
			[]string{"setup", "a"}, nil, v1.PodRunning},
		{"sidecar crash-looping after init", v1.RestartPolicyNever, rs(true, running("a", 0), exited("setup", 0), exited("proxy", 1)),
			[]string{"setup", "a"}, map[string]container.WaitingReason{"proxy": {Reason: "CrashLoopBackOff"}}, v1.PodRunning},
		{"app done, sidecar still running", v1.RestartPolicyNever, rs(true, exited("a", 0), exited("setup", 0), running("proxy", 0)),
			[]string{"proxy", "setup"}, nil, v1.PodRunning},
		{"app done, sidecar killed", v1.RestartPolicyNever, rs(false, exited("a", 0), exited("setup", 0), exited("proxy", 137)),
			nil, nil, v1.PodSucceeded},
		{"app failed, sidecar killed", v1.RestartPolicyNever, rs(false, exited("a", 2), exited("setup", 0), exited("proxy", 143)),
			nil, nil, v1.PodFailed},
		{"app done under OnFailure, sidecar killed", v1.RestartPolicyOnFailure, rs(false, exited("a", 0), exited("setup", 0), exited("proxy", 137)),
			nil, nil, v1.PodSucceeded},
	}
	for _, tc := range cases {
		started, ready := proberSays(tc.started, tc.started...)
		st := Compute(Input{Pod: sidecarPod(tc.policy), Runtime: tc.rt, Waiting: tc.waiting, Started: started, Ready: ready, Now: metav1.NewTime(t0)})
		if st.Phase != tc.want {
			t.Errorf("%s: phase %s, want %s", tc.name, st.Phase, tc.want)
		}
	}
}

func TestSidecarStatusesAndConditions(t *testing.T) {
	pod := sidecarPod(v1.RestartPolicyAlways)

	// The sidecar started but is not ready; setup runs.
	started, ready := proberSays([]string{"proxy", "setup"})
	st := Compute(Input{Pod: pod, Runtime: rs(true, running("setup", 0), running("proxy", 0)), Started: started, Ready: ready, Now: metav1.NewTime(t0)})
	proxy, setup := st.InitContainerStatuses[0], st.InitContainerStatuses[1]
	if !ptr.Deref(proxy.Started, false) || proxy.Ready || proxy.State.Running == nil {
		t.Errorf("proxy %+v, want running, started, not ready", proxy)
	}
	if !ptr.Deref(setup.Started, false) || setup.Ready {
		t.Errorf("running regular init container %+v, want started and not ready", setup)
	}
	if c := podCond(st, v1.PodInitialized); c.Status != v1.ConditionFalse || c.Message != "containers with incomplete status: [setup]" {
		t.Errorf("Initialized %+v, want False naming setup only", c)
	}
	if w := st.ContainerStatuses[0].State.Waiting; w == nil || w.Reason != "PodInitializing" {
		t.Errorf("app state %+v, want PodInitializing", st.ContainerStatuses[0].State)
	}

	// Initialized; the app is ready, the sidecar not: the pod is not Ready, naming the sidecar.
	rt := rs(true, running("a", 0), exited("setup", 0), running("proxy", 0))
	started, ready = proberSays([]string{"proxy", "setup", "a"}, "a")
	st = Compute(Input{Pod: pod, Runtime: rt, Started: started, Ready: ready, Now: metav1.NewTime(t0)})
	if c := podCond(st, v1.PodInitialized); c.Status != v1.ConditionTrue {
		t.Errorf("Initialized %+v", c)
	}
	if c := podCond(st, v1.ContainersReady); c.Status != v1.ConditionFalse || c.Message != "containers with unready status: [proxy]" {
		t.Errorf("ContainersReady %+v, want False naming proxy", c)
	}
	if setup := st.InitContainerStatuses[1]; !setup.Ready || ptr.Deref(setup.Started, true) {
		t.Errorf("completed init container %+v, want ready, not started", setup)
	}

	// Sidecar ready too: the pod is Ready.
	started, ready = proberSays([]string{"proxy", "setup", "a"}, "a", "proxy")
	st = Compute(Input{Pod: pod, Runtime: rt, Started: started, Ready: ready, Now: metav1.NewTime(t0)})
	if c := podCond(st, v1.PodReady); c.Status != v1.ConditionTrue {
		t.Errorf("Ready %+v with every container ready", c)
	}

	// A sidecar that stopped (exit 0 included) is neither ready nor started, and the pod
	// stays initialized once its app ran.
	prev := exited("proxy", 0)
	prev.ID = "proxy-old"
	st = Compute(Input{Pod: pod, Runtime: rs(true, running("a", 0), exited("setup", 0), prev), Started: started, Ready: ready, Now: metav1.NewTime(t0)})
	if proxy := st.InitContainerStatuses[0]; proxy.Ready || ptr.Deref(proxy.Started, true) {
		t.Errorf("stopped sidecar %+v, want not ready, not started", proxy)
	}
	if c := podCond(st, v1.PodInitialized); c.Status != v1.ConditionTrue {
		t.Errorf("Initialized %+v while a sidecar restarts", c)
	}
	if c := podCond(st, v1.PodReady); c.Status != v1.ConditionFalse {
		t.Errorf("Ready %+v while a sidecar is down", c)
	}
}

func podCond(st v1.PodStatus, t v1.PodConditionType) v1.PodCondition {
	if c := findCondition(st.Conditions, t); c != nil {
		return *c
	}
	return v1.PodCondition{}
}
