package kuberuntime

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"

	"github.com/nodelet/nodelet/internal/runtime/container"
)

func debugger(name, target string) v1.EphemeralContainer {
	return v1.EphemeralContainer{
		EphemeralContainerCommon: v1.EphemeralContainerCommon{
			Name: name, Image: testImage, ImagePullPolicy: v1.PullIfNotPresent,
			Command: []string{"sh", "-c", "while true; do echo polo; sleep 2; done"},
			Stdin:   true, TTY: true,
		},
		TargetContainerName: target,
	}
}

// runningPod syncs pod until its app containers run and returns the app container IDs.
func runningPod(t *testing.T, e *testEnv, pod *v1.Pod) map[string]string {
	t.Helper()
	if res := e.sync(pod); res.Err != nil {
		t.Fatal(res.Err)
	}
	ids := map[string]string{}
	for _, c := range pod.Spec.Containers {
		ids[c.Name] = e.running(c.Name).ID
	}
	return ids
}

func TestEphemeralContainerStartsOnceInExistingSandbox(t *testing.T) {
	e := newTestEnv(t)
	pod := newPod("web", ctr("app", "sleep", "1d"))
	appIDs := runningPod(t, e, pod)
	sandboxID := e.fake.Sandboxes()[0].ID

	pod.Spec.EphemeralContainers = []v1.EphemeralContainer{debugger("debugger", "")}
	e.fake.ResetCalls()
	if res := e.sync(pod); res.Err != nil || len(res.Waiting) != 0 {
		t.Fatalf("SyncPod: err %v waiting %v", res.Err, res.Waiting)
	}
	if got := filterCalls(e.fake.Calls(), "RunPodSandbox", "StopContainer", "CreateContainer", "StartContainer"); !reflect.DeepEqual(got, []string{"CreateContainer", "StartContainer"}) {
		t.Errorf("calls = %v, want only the debugger's create and start", got)
	}
	dbg := e.running("debugger")
	cfg := dbg.Config
	if dbg.SandboxID != sandboxID || len(e.fake.Sandboxes()) != 1 {
		t.Errorf("debugger in sandbox %s, want the existing %s", dbg.SandboxID, sandboxID)
	}
	if cfg.Labels[LabelEphemeral] != "true" || cfg.Labels[container.LabelContainerName] != "debugger" {
		t.Errorf("labels %v", cfg.Labels)
	}
	if !cfg.Tty || !cfg.Stdin || cfg.LogPath != "debugger/0.log" || cfg.Metadata.Attempt != 0 {
		t.Errorf("tty %v stdin %v log %q attempt %d", cfg.Tty, cfg.Stdin, cfg.LogPath, cfg.Metadata.Attempt)
	}
	if ns := cfg.Linux.SecurityContext.NamespaceOptions; ns.Pid != runtimeapi.NamespaceMode_CONTAINER || ns.TargetId != "" {
		t.Errorf("untargeted debugger pid namespace %v", ns)
	}
	if e.running("app").ID != appIDs["app"] {
		t.Error("app container was replaced")
	}
	if evs := e.events(); !hasEvent(evs, "Normal Started Started container debugger") {
		t.Errorf("events %q lack the debugger's start", evs)
	}

	// Once it exits it stays exited, although the pod restarts its containers Always.
	e.exit("debugger", 1)
	for range 2 {
		e.fake.ResetCalls()
		if res := e.sync(pod); res.Err != nil || len(res.Waiting) != 0 {
			t.Fatalf("SyncPod after exit: err %v waiting %v", res.Err, res.Waiting)
		}
		if n := e.fake.CountCalls("CreateContainer"); n != 0 {
			t.Errorf("CreateContainer called %d times after the debugger exited", n)
		}
	}
	if n := len(e.containersNamed("debugger")); n != 1 {
		t.Errorf("%d debugger containers, want 1", n)
	}
}

func TestAddingEphemeralContainerLeavesRegularContainersAlone(t *testing.T) {
	e := newTestEnv(t)
	pod := newPod("web", ctr("a", "sleep", "1d"), ctr("b", "sleep", "1d"))
	ids := runningPod(t, e, pod)

	pod.Spec.EphemeralContainers = []v1.EphemeralContainer{debugger("debugger", "a")}
	e.sync(pod)
	pod.Spec.EphemeralContainers = append(pod.Spec.EphemeralContainers, debugger("debugger2", ""))
	e.sync(pod)
	e.sync(pod)

	if n := e.fake.CountCalls("StopContainer"); n != 0 {
		t.Errorf("StopContainer called %d times", n)
	}
	for name, id := range ids {
		if got := e.running(name).ID; got != id {
			t.Errorf("container %s replaced: %s, was %s", name, got, id)
		}
	}
	e.running("debugger")
	e.running("debugger2")
	if evs := e.events(); hasEvent(evs, "Normal Killing") {
		t.Errorf("events %q show a kill", evs)
	}
}

func TestEphemeralTargetSetsPIDNamespace(t *testing.T) {
	e := newTestEnv(t)
	pod := newPod("web", ctr("app", "sleep", "1d"), ctr("side", "sleep", "1d"))
	ids := runningPod(t, e, pod)

	pod.Spec.EphemeralContainers = []v1.EphemeralContainer{debugger("debugger", "side")}
	if res := e.sync(pod); res.Err != nil {
		t.Fatal(res.Err)
	}
	ns := e.running("debugger").Config.Linux.SecurityContext.NamespaceOptions
	if ns.Pid != runtimeapi.NamespaceMode_TARGET || ns.TargetId != ids["side"] {
		t.Errorf("pid namespace %v target %q, want TARGET %q", ns.Pid, ns.TargetId, ids["side"])
	}
	if ns.Network != runtimeapi.NamespaceMode_POD || ns.Ipc != runtimeapi.NamespaceMode_POD {
		t.Errorf("network/ipc namespaces %v", ns)
	}
}

func TestEphemeralTargetInSharedPIDNamespaceKeepsPodMode(t *testing.T) {
	e := newTestEnv(t)
	pod := newPod("web", ctr("app", "sleep", "1d"))
	share := true
	pod.Spec.ShareProcessNamespace = &share
	runningPod(t, e, pod)

	pod.Spec.EphemeralContainers = []v1.EphemeralContainer{debugger("debugger", "app")}
	e.sync(pod)
	if ns := e.running("debugger").Config.Linux.SecurityContext.NamespaceOptions; ns.Pid != runtimeapi.NamespaceMode_POD || ns.TargetId != "" {
		t.Errorf("pid namespace %v target %q, want POD", ns.Pid, ns.TargetId)
	}
}

func TestEphemeralWaitsForRunningTarget(t *testing.T) {
	e := newTestEnv(t)
	pod := newPod("web", ctr("app", "sleep", "1d"), ctr("side", "true"))
	pod.Spec.RestartPolicy = v1.RestartPolicyNever
	runningPod(t, e, pod)
	e.exit("side", 0)

	pod.Spec.EphemeralContainers = []v1.EphemeralContainer{debugger("debugger", "side")}
	res := e.sync(pod)
	if w := res.Waiting["debugger"]; w.Reason != ReasonCreateContainerConfigError || !strings.Contains(w.Message, `target container "side" is not running`) {
		t.Errorf("waiting %+v", res.Waiting)
	}
	if res.Err == nil {
		t.Error("no error for a debugger that could not start")
	}
	if n := len(e.containersNamed("debugger")); n != 0 {
		t.Errorf("%d debugger containers created without a running target", n)
	}
}

func TestEphemeralStartsWhileInitContainersRun(t *testing.T) {
	e := newTestEnv(t)
	pod := newPod("web", ctr("app", "sleep", "1d"))
	pod.Spec.InitContainers = []v1.Container{ctr("init", "sleep", "1d")}
	e.sync(pod)
	e.running("init")

	pod.Spec.EphemeralContainers = []v1.EphemeralContainer{debugger("debugger", "init")}
	if res := e.sync(pod); res.Err != nil {
		t.Fatal(res.Err)
	}
	if ns := e.running("debugger").Config.Linux.SecurityContext.NamespaceOptions; ns.TargetId != e.running("init").ID {
		t.Errorf("debugger targets %q", ns.TargetId)
	}
	if n := len(e.containersNamed("app")); n != 0 {
		t.Errorf("app started before init finished")
	}
}

func TestEphemeralNotRestartedInNewSandbox(t *testing.T) {
	e := newTestEnv(t)
	pod := newPod("web", ctr("app", "sleep", "1d"))
	pod.Spec.EphemeralContainers = []v1.EphemeralContainer{debugger("debugger", "")}
	e.sync(pod) // new sandbox and app; the debugger starts in it too
	e.running("debugger")
	if err := e.fake.StopSandbox(e.fake.Sandboxes()[0].ID); err != nil {
		t.Fatal(err)
	}
	if res := e.sync(pod); res.Err != nil {
		t.Fatal(res.Err)
	}
	e.sync(pod)
	if sbs := e.fake.Sandboxes(); len(sbs) != 2 || e.running("app").SandboxID != sbs[1].ID {
		t.Fatalf("sandbox not replaced: %+v", sbs)
	}
	dbg := e.containersNamed("debugger")
	if len(dbg) != 1 || dbg[0].State == runtimeapi.ContainerState_CONTAINER_RUNNING {
		t.Errorf("debugger instances %+v, want the one old stopped one", dbg)
	}
}

func TestEphemeralStartFailureIsRetried(t *testing.T) {
	e := newTestEnv(t)
	pod := newPod("web", ctr("app", "sleep", "1d"))
	runningPod(t, e, pod)

	pod.Spec.EphemeralContainers = []v1.EphemeralContainer{debugger("debugger", "")}
	e.fake.FailNext("StartContainer", errors.New("exec: not found"))
	res := e.sync(pod)
	if w := res.Waiting["debugger"]; w.Reason != ReasonRunContainerError {
		t.Fatalf("waiting %+v", res.Waiting)
	}
	if n := len(e.containersNamed("debugger")); n != 0 {
		t.Errorf("%d debugger containers left after the failed start", n)
	}
	if res := e.sync(pod); res.Err != nil || len(res.Waiting) != 0 {
		t.Fatalf("retry: %+v", res)
	}
	e.running("debugger")
}

func TestKillPodStopsEphemeralContainers(t *testing.T) {
	e := newTestEnv(t)
	pod := newPod("web", ctr("app", "sleep", "1d"))
	pod.Spec.TerminationGracePeriodSeconds = ptr.To[int64](3)
	runningPod(t, e, pod)
	pod.Spec.EphemeralContainers = []v1.EphemeralContainer{debugger("debugger", "app")}
	e.sync(pod)
	e.running("debugger")

	if err := e.mgr.KillPod(context.Background(), pod, nil, -1); err != nil {
		t.Fatal(err)
	}
	for _, c := range e.fake.Containers() {
		if c.State != runtimeapi.ContainerState_CONTAINER_EXITED || c.StopTimeout != 3 {
			t.Errorf("container %s: state %s stop timeout %d", c.Config.Metadata.Name, c.State, c.StopTimeout)
		}
	}
}
