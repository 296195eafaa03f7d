//go:build guestvm

package inguest

import (
	"testing"

	v1 "k8s.io/api/core/v1"
)

// TestOOMKilledContainerReported runs a container that outgrows its 32Mi limit: the kernel
// kills it in its cgroup (the pod slice's memory.events counts the kill) and nodelet reports
// it terminated with reason OOMKilled, exit code 137.
func TestOOMKilledContainerReported(t *testing.T) {
	useDriver(t, "systemd")
	n := startNodelet(t, "cgroupDriver: systemd\n")
	res := `    resources:
      limits: {cpu: 200m, memory: 32Mi}
`
	// The string doubles until the shell holds more than the limit.
	n.writeManifest("oom", staticPod("oom", res, "x=0123456789abcdef; while true; do x=$x$x; done", "Never"))
	pod := n.waitPod("oom", "terminated", func(p *v1.Pod) bool {
		cs := p.Status.ContainerStatuses
		return len(cs) > 0 && cs[0].State.Terminated != nil
	})
	term := pod.Status.ContainerStatuses[0].State.Terminated
	if term.Reason != "OOMKilled" || term.ExitCode != 137 {
		t.Errorf("container terminated with reason %q, exit code %d; want OOMKilled, 137", term.Reason, term.ExitCode)
	}
	events := readCgroup(t, "/kubepods.slice/kubepods-pod"+sliceUID(pod)+".slice", "memory.events")
	if !hasPositive(events, "oom_kill") {
		t.Errorf("the pod slice's memory.events counts no oom_kill:\n%s", events)
	}
}
