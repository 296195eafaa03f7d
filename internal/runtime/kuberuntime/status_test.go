package kuberuntime

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodelet/nodelet/internal/podspec/kubehash"
	"github.com/nodelet/nodelet/internal/runtime/container"
)

func TestGetPodStatusSortsAndCountsRestarts(t *testing.T) {
	e := newTestEnv(t)
	pod := newPod("web", ctr("app", "sleep", "1d"), ctr("side", "sleep", "1d"))
	e.sync(pod)
	for i := 0; i < 2; i++ {
		e.exit("app", 1)
		e.clock.Step(time.Minute) // past any back-off
		e.sync(pod)
	}
	st := e.status(pod)
	if st.UID != pod.UID || st.Name != "web" || st.Namespace != "default" {
		t.Errorf("identity %s %s/%s", st.UID, st.Namespace, st.Name)
	}
	if len(st.Sandboxes) != 1 || !st.Sandboxes[0].Ready || len(st.IPs) != 1 || st.IPs[0] != st.Sandboxes[0].IPs[0] {
		t.Fatalf("sandboxes %+v IPs %v", st.Sandboxes, st.IPs)
	}
	var apps []*container.ContainerStatus
	for i, c := range st.Containers {
		if i > 0 && c.CreatedAt.After(st.Containers[i-1].CreatedAt) {
			t.Errorf("containers not sorted newest first at %d", i)
		}
		if c.Name == "app" {
			apps = append(apps, c)
		}
	}
	if len(apps) != 3 {
		t.Fatalf("app instances = %d, want 3 (dead ones included)", len(apps))
	}
	for i, want := range []struct {
		state    container.ContainerState
		restarts int
	}{{container.StateRunning, 2}, {container.StateExited, 1}, {container.StateExited, 0}} {
		if apps[i].State != want.state || apps[i].RestartCount != want.restarts {
			t.Errorf("app[%d] = %s restarts %d, want %s %d", i, apps[i].State, apps[i].RestartCount, want.state, want.restarts)
		}
	}
	cur := st.FindContainer("app")
	if cur != apps[0] || cur.Hash != kubehash.ContainerHash(&pod.Spec.Containers[0]) || cur.Image != testImage ||
		cur.ImageRef == "" || cur.SandboxID != st.Sandboxes[0].ID || cur.StartedAt.IsZero() {
		t.Errorf("current app status %+v", cur)
	}
	if dead := apps[1]; dead.ExitCode != 1 || dead.Reason != "Error" || dead.FinishedAt.IsZero() {
		t.Errorf("dead app status %+v", dead)
	}
}

func TestTerminationMessage(t *testing.T) {
	e := newTestEnv(t)
	fromFile := ctr("file", "true")
	fromLogs := ctr("logs", "true")
	fromLogs.TerminationMessagePolicy = v1.TerminationMessageFallbackToLogsOnError
	succeeded := ctr("ok", "true")
	succeeded.TerminationMessagePolicy = v1.TerminationMessageFallbackToLogsOnError
	pod := newPod("term", fromFile, fromLogs, succeeded)
	pod.Spec.RestartPolicy = v1.RestartPolicyNever
	e.sync(pod)

	termFile := func(name string) string {
		return mountMap(e.running(name).Config.Mounts)["/dev/termination-log"]
	}
	if err := os.WriteFile(termFile("file"), []byte(strings.Repeat("x", 5000)), 0o644); err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	for i := 1; i <= 100; i++ {
		fmt.Fprintf(&log, "2024-01-01T00:00:00.000000000Z stderr F line %d\n", i)
	}
	log.WriteString("2024-01-01T00:00:00.000000000Z stderr P part-\n2024-01-01T00:00:00.000000000Z stderr F end\n")
	for _, name := range []string{"logs", "ok"} {
		if err := os.WriteFile(e.running(name).LogPath, []byte(log.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	e.exit("file", 1)
	e.exit("logs", 2)
	e.exit("ok", 0)

	st := e.status(pod)
	if msg := st.FindContainer("file").Message; msg != strings.Repeat("x", 4096) {
		t.Errorf("file message has %d bytes, want 4096", len(msg))
	}
	msg := st.FindContainer("logs").Message
	lines := strings.Split(msg, "\n")
	if len(lines) != 80 || lines[79] != "part-end" || lines[0] != "line 22" {
		t.Errorf("log tail: %d lines, first %q last %q", len(lines), lines[0], lines[len(lines)-1])
	}
	if msg := st.FindContainer("ok").Message; msg != "" {
		t.Errorf("successful container got message %q", msg)
	}
}

func TestLogTailByteLimit(t *testing.T) {
	path := t.TempDir() + "/0.log"
	var log strings.Builder
	for i := 0; i < 50; i++ {
		fmt.Fprintf(&log, "2024-01-01T00:00:00Z stdout F %s\n", strings.Repeat("y", 100))
	}
	if err := os.WriteFile(path, []byte(log.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := logTail(path); len(got) != maxLogTailBytes || !strings.HasSuffix(got, "yyy") {
		t.Errorf("tail has %d bytes", len(got))
	}
}

func TestGetPodsGroupsWithTwoCalls(t *testing.T) {
	e := newTestEnv(t)
	a := newPod("a", ctr("app", "sleep", "1d"))
	b := newPod("b", ctr("app2", "sleep", "1d"), ctr("app3", "sleep", "1d"))
	e.sync(a)
	e.sync(b)
	if err := e.mgr.KillPod(context.Background(), a, nil, 0); err != nil {
		t.Fatal(err)
	}

	e.fake.ResetCalls()
	all, err := e.mgr.GetPods(context.Background(), true)
	if err != nil {
		t.Fatal(err)
	}
	if calls := e.fake.Calls(); len(calls) != 2 {
		t.Errorf("GetPods made %d CRI calls: %v", len(calls), calls)
	}
	if len(all) != 2 {
		t.Fatalf("GetPods(true) = %d pods", len(all))
	}
	byUID := map[string]*container.RunningPod{}
	for _, p := range all {
		byUID[string(p.UID)] = p
	}
	pb := byUID["uid-b"]
	if pb == nil || pb.Name != "b" || pb.Namespace != "default" || len(pb.Containers) != 2 || len(pb.Sandboxes) != 1 || !pb.Sandboxes[0].Ready {
		t.Errorf("pod b = %+v", pb)
	}
	if pa := byUID["uid-a"]; pa == nil || pa.Containers[0].State != container.StateExited || pa.Sandboxes[0].Ready {
		t.Errorf("pod a = %+v", pa)
	}
	if pb.Containers[0].Hash == 0 {
		t.Error("list items lack the hash annotation")
	}

	running, err := e.mgr.GetPods(context.Background(), false)
	if err != nil || len(running) != 1 || running[0].UID != "uid-b" {
		t.Errorf("GetPods(false) = %+v, %v", running, err)
	}
}

func TestStatusAndVersion(t *testing.T) {
	e := newTestEnv(t)
	ctx := context.Background()
	if err := e.mgr.Status(ctx); err != nil {
		t.Fatalf("healthy runtime: %v", err)
	}
	e.fake.SetCondition(runtimeapi.NetworkReady, false)
	if err := e.mgr.Status(ctx); err == nil || !strings.Contains(err.Error(), "NetworkReady=false") {
		t.Errorf("network not ready: %v", err)
	}
	name, version, err := e.mgr.Version(ctx)
	if err != nil || name != "fakecri" || version != "1.0.0" {
		t.Errorf("Version = %q %q %v", name, version, err)
	}
}
