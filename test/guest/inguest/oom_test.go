//go:build guestvm

package inguest

import (
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

const (
	oomResources = `    resources:
      limits: {cpu: 200m, memory: 32Mi}
`
	// A child shell doubles a string until it holds more than the limit; the container's
	// first process only waits for it, then sleeps. The kernel's victim is the child: the
	// container ends only if the kill takes its whole cgroup (memory.oom.group).
	oomScript = "sh -c 'x=0123456789abcdef; while true; do x=$x$x; done'; echo survived; sleep 3600"
)

// TestOOMKilledContainerReported runs a container whose child process outgrows its 32Mi
// limit: with singleProcessOOMKill false (the default on cgroup v2) the kernel kills the
// whole container, not just the child; the pod slice's memory.events counts the kill and
// nodelet reports the container terminated with reason OOMKilled, exit code 137.
func TestOOMKilledContainerReported(t *testing.T) {
	useDriver(t, "systemd")
	n := startNodelet(t, "cgroupDriver: systemd\n")
	n.writeManifest("oom", staticPod("oom", oomResources, oomScript, "Never"))
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

// TestSingleProcessOOMKillSparesTheRest is the same container with singleProcessOOMKill
// true: memory.oom.group is 0, the kernel kills only the child and the container runs on.
func TestSingleProcessOOMKillSparesTheRest(t *testing.T) {
	useDriver(t, "systemd")
	n := startNodelet(t, "cgroupDriver: systemd\nsingleProcessOOMKill: true\n")
	n.writeManifest("oom", staticPod("oom", oomResources, oomScript, "Never"))
	pod := n.waitRunning("oom")
	cg := containerCgroup(t, pod)
	if got := readCgroup(t, cg, "memory.oom.group"); got != "0" {
		t.Errorf("%s/memory.oom.group = %q, want 0", cg, got)
	}
	deadline := time.Now().Add(podTimeout)
	for !hasPositive(readCgroup(t, cg, "memory.events"), "oom_kill") {
		if time.Now().After(deadline) {
			t.Fatalf("no OOM kill in %s after %v", cg, podTimeout)
		}
		time.Sleep(time.Second)
	}
	time.Sleep(15 * time.Second) // a status sync or two
	pods, err := n.pods()
	if err != nil {
		t.Fatal(err)
	}
	if cs := pods["oom"].Status.ContainerStatuses; len(cs) == 0 || cs[0].State.Running == nil {
		t.Errorf("after the child's OOM kill the container is not running: %+v", cs)
	}
	if procs := readCgroup(t, cg, "cgroup.procs"); len(strings.Fields(procs)) == 0 {
		t.Errorf("no process left in %s", cg)
	}
}
