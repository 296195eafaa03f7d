package kuberuntime

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"
)

// With the ContainerStopSignals gate on, a container's lifecycle.stopSignal reaches CRI in
// CRI's spelling and the signal the runtime reports comes back in the API's; a container
// without one leaves the runtime's default. With the gate off nothing is sent.
func TestStopSignalReachesCRI(t *testing.T) {
	pod := newPod("signals", ctr("usr1"), ctr("rt"), ctr("plain"))
	pod.Spec.Containers[0].Lifecycle = &v1.Lifecycle{StopSignal: ptr.To(v1.SIGUSR1)}
	pod.Spec.Containers[1].Lifecycle = &v1.Lifecycle{StopSignal: ptr.To(v1.SIGRTMINPLUS1)}

	e := newTestEnv(t, func(o *Options) { o.StopSignals = true })
	if res := e.sync(pod); res.Err != nil {
		t.Fatal(res.Err)
	}
	want := map[string]runtimeapi.Signal{"usr1": runtimeapi.Signal_SIGUSR1, "rt": runtimeapi.Signal_SIGRTMINPLUS1, "plain": runtimeapi.Signal_RUNTIME_DEFAULT}
	for name, sig := range want {
		if got := e.running(name).Config.GetStopSignal(); got != sig {
			t.Errorf("%s: CRI stop_signal %v, want %v", name, got, sig)
		}
	}
	reported := map[string]string{}
	for _, c := range e.status(pod).Containers {
		reported[c.Name] = c.StopSignal
	}
	if reported["usr1"] != "SIGUSR1" || reported["rt"] != "SIGRTMIN+1" || reported["plain"] != "" {
		t.Errorf("reported stop signals %v", reported)
	}

	off := newTestEnv(t)
	if res := off.sync(pod); res.Err != nil {
		t.Fatal(res.Err)
	}
	if got := off.running("usr1").Config.GetStopSignal(); got != runtimeapi.Signal_RUNTIME_DEFAULT {
		t.Errorf("gate off: CRI stop_signal %v", got)
	}
}
