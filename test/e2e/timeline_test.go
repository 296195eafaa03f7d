//go:build e2e

package e2e

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/nodelet/nodelet/internal/testutil"
)

// The pod timeline is on the kubelet API, reachable through the API server's node proxy with
// the same authorization as /pods, and lists the pod's steps in order.
func TestPodTimelineThroughTheNodeProxy(t *testing.T) {
	c := joinCluster(t)
	c.waitReady(t)
	c.createPod(podSpec("traced", "exec sleep 3600"))
	c.waitPodPhase("traced", v1.PodRunning, 60*time.Second)
	raw := kubectl(t, "get", "--raw", "/api/v1/nodes/"+nodeName+"/proxy/debug/pods/"+c.ns+"/traced/timeline")
	var tl struct {
		Steps []struct {
			Name, Call string
			Start, End time.Time
		}
	}
	if err := json.Unmarshal([]byte(raw), &tl); err != nil {
		t.Fatalf("%v: %s", err, raw)
	}
	var names []string
	for _, s := range tl.Steps {
		names = append(names, s.Name)
		if s.End.Before(s.Start) {
			t.Errorf("step %s ends before it starts", s.Name)
		}
	}
	names = sandboxFirst(names)
	want := []string{"admitted", "sandbox created", "image ready", "container created", "container started"}
	if len(names) < len(want) {
		t.Fatalf("steps %v, want at least %v", names, want)
	}
	for i, w := range want {
		if names[i] != w {
			t.Fatalf("steps %v, want them to start with %v", names, want)
		}
	}
	// nodelet explain reads the same through the API server and says the pod is ready.
	testutil.WaitFor(t, 30*time.Second, "explain saying the pod is ready", func() (bool, string) {
		out, err := exec.Command(nodeletBin, "explain", c.ns+"/traced", "--kubeconfig", adminKubeconfig, "--node", nodeName).CombinedOutput()
		return err == nil && strings.Contains(string(out), "Now: ready for") && strings.Contains(string(out), "container started"), string(out)
	})
}

// nodelet explain names what each pod waits on — nothing (ready), a failing readiness probe,
// a crash-loop back-off — and exits non-zero for a pod stuck longer than --stuck-after.
func TestExplainNamesEachPodsBlocker(t *testing.T) {
	c := joinCluster(t)
	c.waitReady(t)
	unready := podSpec("unready", "exec sleep 3600")
	unready.Spec.Containers[0].ReadinessProbe = &v1.Probe{PeriodSeconds: 1,
		ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"sh", "-c", "exit 1"}}}}
	c.createPod(podSpec("fine", "exec sleep 3600"))
	c.createPod(unready)
	c.createPod(podSpec("crashing", "echo dying; exit 1"))
	explain := func(pod string) (string, bool) {
		out, err := exec.Command(nodeletBin, "explain", c.ns+"/"+pod, "--kubeconfig", adminKubeconfig, "--node", nodeName,
			"--stuck-after", "2s").CombinedOutput()
		return string(out), err == nil
	}
	for _, tc := range []struct {
		pod, now string
		ok       bool
	}{
		{"fine", "Now: ready for", true},
		{"unready", "Now: readiness probe of main failing for", false},
		{"crashing", "Now: container main in back-off after exit 1", false},
	} {
		testutil.WaitFor(t, 90*time.Second, "explain naming "+tc.pod+"'s blocker", func() (bool, string) {
			out, ok := explain(tc.pod)
			return strings.Contains(out, tc.now) && ok == tc.ok, out
		})
	}
}
