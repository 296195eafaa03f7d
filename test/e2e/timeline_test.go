//go:build e2e

package e2e

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
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
	waitFor(t, 30*time.Second, "explain saying the pod is ready", func() (bool, string) {
		out, err := exec.Command(nodeletBin, "explain", c.ns+"/traced", "--kubeconfig", adminKubeconfig, "--node", nodeName).CombinedOutput()
		return err == nil && strings.Contains(string(out), "Now: ready for") && strings.Contains(string(out), "container started"), string(out)
	})
}
