//go:build real

package kuberuntime

// Tests against a real CRI runtime. They run only when NODELET_E2E_CRI names its endpoint:
//
//	NODELET_E2E_CRI=unix:///run/nodelet/containerd/containerd.sock go test -tags real ./internal/runtime/kuberuntime -run Real
//
// They need root, the images nodelet.local/busybox:1.36 and registry.k8s.io/pause:3.10 in the
// runtime, and write container logs under /var/log/pods.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/utils/ptr"

	"github.com/nodelet/nodelet/internal/podspec/kubehash"
	"github.com/nodelet/nodelet/internal/runtime/container"
	"github.com/nodelet/nodelet/internal/runtime/cri"
	"github.com/nodelet/nodelet/internal/testutil"
	"github.com/nodelet/nodelet/internal/volumes/volumestest"
)

const realPodLogsDir = "/var/log/pods"

func realManager(t *testing.T) *Manager {
	t.Helper()
	root := t.TempDir()
	m, err := NewManager(Options{
		CRI: testutil.RealCRI(t), RootDir: root, PodLogsDir: realPodLogsDir,
		Recorder: record.NewFakeRecorder(1000), NodeName: "e2e-node", Volumes: volumestest.Start(t, root),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := m.Status(ctx); err != nil {
		t.Fatalf("runtime not ready: %v", err)
	}
	name, version, err := m.Version(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("runtime %s %s", name, version)
	return m
}

func realPod(t *testing.T, prefix string, containers ...v1.Container) *v1.Pod {
	suffix := make([]byte, 4)
	_, _ = rand.Read(suffix)
	id := hex.EncodeToString(suffix)
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: prefix + "-" + id, Namespace: "default", UID: types.UID("e2e-" + id + "-uid")},
		Spec: v1.PodSpec{
			Containers: containers, RestartPolicy: v1.RestartPolicyAlways,
			TerminationGracePeriodSeconds: ptr.To[int64](5),
		},
	}
	client := testutil.RealCRI(t) // closed after the pod's clean-up, registered later
	t.Cleanup(func() { cleanupRealPod(t, client, pod) })
	return pod
}

// cleanupRealPod removes whatever a failed test left behind.
func cleanupRealPod(t *testing.T, client *cri.Client, pod *v1.Pod) {
	m, err := NewManager(Options{CRI: client, PodLogsDir: realPodLogsDir, RootDir: t.TempDir()})
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_ = m.KillPod(ctx, pod, nil, 0)
	_ = m.RemovePod(ctx, pod.UID)
}

func TestRealBusyboxPodLifecycle(t *testing.T) {
	m := realManager(t)
	ctx := context.Background()
	main := v1.Container{
		Name: "main", Image: "nodelet.local/busybox:1.36", ImagePullPolicy: v1.PullIfNotPresent,
		Command: []string{"sh", "-c", "echo hello; echo $(GREETING) from $POD_NAME; sleep 3600"},
		Env: []v1.EnvVar{{Name: "GREETING", Value: "hi"},
			{Name: "POD_NAME", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}}},
	}
	pod := realPod(t, "busybox", main)
	backoff := flowcontrol.NewBackOff(10*time.Second, 300*time.Second)

	status, err := m.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
	if err != nil {
		t.Fatal(err)
	}
	if res := m.SyncPod(ctx, pod, status, backoff); res.Err != nil || len(res.Waiting) != 0 {
		t.Fatalf("SyncPod: err %v waiting %v", res.Err, res.Waiting)
	}
	testutil.WaitUntil(t, 30*time.Second, "a running container", func() bool {
		status, err = m.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
		return err == nil && status.FindContainer("main") != nil && status.FindContainer("main").State == container.StateRunning
	})
	if len(status.IPs) == 0 || !strings.HasPrefix(status.IPs[0], "10.85.") {
		t.Fatalf("pod IPs = %v, want a 10.85.x.x address", status.IPs)
	}
	c := status.FindContainer("main")
	if c.Image != main.Image || c.ImageRef == "" || c.Hash != kubehash.ContainerHash(&pod.Spec.Containers[0]) || c.RestartCount != 0 {
		t.Errorf("container status %+v", c)
	}
	t.Logf("pod IP %s, container %s", status.IPs[0], c.ID)

	logFile := filepath.Join(realPodLogsDir, "default_"+pod.Name+"_"+string(pod.UID), "main", "0.log")
	var logs string
	testutil.WaitUntil(t, 10*time.Second, "the container's log lines", func() bool {
		data, _ := os.ReadFile(logFile)
		logs = string(data)
		return strings.Contains(logs, "hello") && strings.Contains(logs, "hi from "+pod.Name)
	})
	if !strings.Contains(logs, " stdout F hello\n") {
		t.Errorf("log not in CRI format: %q", logs)
	}

	// A second sync of the healthy pod changes nothing.
	if res := m.SyncPod(ctx, pod, status, backoff); res.Err != nil || len(res.Waiting) != 0 {
		t.Fatalf("second SyncPod: %+v", res)
	}
	if st, _ := m.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace); len(st.Containers) != 1 || len(st.Sandboxes) != 1 {
		t.Fatalf("second sync changed the pod: %d containers, %d sandboxes", len(st.Containers), len(st.Sandboxes))
	}
	running, err := m.GetPods(ctx, false)
	if err != nil || findRunningPod(running, pod.UID) == nil {
		t.Fatalf("GetPods(false) lacks the pod (err %v)", err)
	}

	if err := m.KillPod(ctx, pod, nil, 5); err != nil {
		t.Fatalf("KillPod: %v", err)
	}
	status, err = m.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
	if err != nil {
		t.Fatal(err)
	}
	if c := status.FindContainer("main"); c.State != container.StateExited || status.Sandboxes[0].Ready {
		t.Fatalf("after KillPod: container %s, sandbox ready %v", c.State, status.Sandboxes[0].Ready)
	}
	if running, _ := m.GetPods(ctx, false); findRunningPod(running, pod.UID) != nil {
		t.Error("killed pod still listed as running")
	}

	if err := m.RemovePod(ctx, pod.UID); err != nil {
		t.Fatalf("RemovePod: %v", err)
	}
	status, err = m.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
	if err != nil || len(status.Sandboxes) != 0 || len(status.Containers) != 0 {
		t.Fatalf("after RemovePod: %+v (err %v)", status, err)
	}
	if all, _ := m.GetPods(ctx, true); findRunningPod(all, pod.UID) != nil {
		t.Error("removed pod still on the runtime")
	}
	if _, err := os.Stat(filepath.Dir(filepath.Dir(logFile))); !os.IsNotExist(err) {
		t.Errorf("pod log directory left behind: %v", err)
	}
}

func TestRealInitAndTerminationMessage(t *testing.T) {
	m := realManager(t)
	ctx := context.Background()
	pod := realPod(t, "term", v1.Container{
		Name: "main", Image: "nodelet.local/busybox:1.36", ImagePullPolicy: v1.PullIfNotPresent,
		Command:      []string{"sh", "-c", "cat /work/init.txt; printf bye > /dev/termination-log; exit 3"},
		VolumeMounts: []v1.VolumeMount{{Name: "work", MountPath: "/work"}},
	})
	pod.Spec.RestartPolicy = v1.RestartPolicyNever
	pod.Spec.InitContainers = []v1.Container{{
		Name: "setup", Image: "nodelet.local/busybox:1.36", ImagePullPolicy: v1.PullIfNotPresent,
		Command:      []string{"sh", "-c", "echo from-init > /work/init.txt"},
		VolumeMounts: []v1.VolumeMount{{Name: "work", MountPath: "/work"}},
	}}
	pod.Spec.Volumes = []v1.Volume{{Name: "work", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}}
	backoff := flowcontrol.NewBackOff(10*time.Second, 300*time.Second)

	var main *container.ContainerStatus
	testutil.WaitUntil(t, 60*time.Second, "the app container to exit", func() bool {
		status, err := m.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
		if err != nil {
			t.Fatal(err)
		}
		if main = status.FindContainer("main"); main != nil && main.State == container.StateExited {
			return true
		}
		if res := m.SyncPod(ctx, pod, status, backoff); res.Err != nil {
			t.Fatalf("SyncPod: %v", res.Err)
		}
		return false
	})
	if main.ExitCode != 3 || main.Message != "bye" {
		t.Errorf("exit code %d message %q, want 3 and %q", main.ExitCode, main.Message, "bye")
	}
	logFile := filepath.Join(realPodLogsDir, "default_"+pod.Name+"_"+string(pod.UID), "main", "0.log")
	if data, _ := os.ReadFile(logFile); !strings.Contains(string(data), "from-init") {
		t.Errorf("app did not see the init container's file; log %q", data)
	}
	// Under restartPolicy Never the failed app container stays dead.
	status, _ := m.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
	m.SyncPod(ctx, pod, status, backoff)
	if status, _ = m.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace); len(status.Containers) != 2 {
		t.Errorf("containers = %d, want init + app", len(status.Containers))
	}
	if err := m.KillPod(ctx, pod, nil, 0); err != nil {
		t.Fatal(err)
	}
	if err := m.RemovePod(ctx, pod.UID); err != nil {
		t.Fatal(err)
	}
}

func findRunningPod(pods []*container.RunningPod, uid types.UID) *container.RunningPod {
	for _, p := range pods {
		if p.UID == uid {
			return p
		}
	}
	return nil
}

func TestRealSandboxRecreationAndRestart(t *testing.T) {
	m := realManager(t)
	ctx := context.Background()
	pod := realPod(t, "recreate", v1.Container{
		Name: "main", Image: "nodelet.local/busybox:1.36", ImagePullPolicy: v1.PullIfNotPresent,
		Command: []string{"sh", "-c", "echo run; sleep 3600"},
	})
	backoff := flowcontrol.NewBackOff(10*time.Second, 300*time.Second)
	sync := func() container.SyncResult {
		t.Helper()
		st, err := m.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
		if err != nil {
			t.Fatal(err)
		}
		res := m.SyncPod(ctx, pod, st, backoff)
		if res.Err != nil {
			t.Fatalf("SyncPod: %v", res.Err)
		}
		return res
	}
	runningIn := func(attempt uint32, restarts int) *container.PodStatus {
		t.Helper()
		var st *container.PodStatus
		testutil.WaitUntil(t, 30*time.Second, "a running container", func() bool {
			st, _ = m.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
			c := st.FindContainer("main")
			return c != nil && c.State == container.StateRunning && len(st.Sandboxes) > 0 && st.Sandboxes[0].Attempt == attempt
		})
		if c := st.FindContainer("main"); c.RestartCount != restarts {
			t.Fatalf("restart count %d, want %d", c.RestartCount, restarts)
		}
		return st
	}
	sync()
	first := runningIn(0, 0)

	// The sandbox dies (as after a runtime restart): SyncPod replaces it, attempt 1, and the
	// container follows with restart count 1 and a new log file.

	if err := m.cri.StopPodSandbox(ctx, first.Sandboxes[0].ID); err != nil {
		t.Fatal(err)
	}
	sync()
	second := runningIn(1, 1)
	if second.Sandboxes[0].ID == first.Sandboxes[0].ID || len(second.IPs) == 0 {
		t.Fatalf("sandbox not replaced: %+v", second.Sandboxes[0])
	}
	logDir := filepath.Join(realPodLogsDir, "default_"+pod.Name+"_"+string(pod.UID), "main")
	testutil.WaitUntil(t, 10*time.Second, "the restarted container's log", func() bool {
		data, _ := os.ReadFile(filepath.Join(logDir, "1.log"))
		return strings.Contains(string(data), "run")
	})

	// Starting it in the new sandbox counted as a restart, so a crash now waits out the
	// first 10s back-off before the next restart.
	if err := m.cri.StopContainer(ctx, second.FindContainer("main").ID, 0); err != nil {
		t.Fatal(err)
	}
	res := sync()
	if w := res.Waiting["main"]; w.Reason != ReasonCrashLoopBackOff || res.RequeueAfter <= 0 || res.RequeueAfter > 10*time.Second {
		t.Fatalf("after a crash: %+v", res)
	}
	time.Sleep(res.RequeueAfter)
	if res := sync(); len(res.Waiting) != 0 {
		t.Fatalf("after the back-off: %+v", res)
	}
	runningIn(1, 2)

	if err := m.KillPod(ctx, pod, nil, 1); err != nil {
		t.Fatal(err)
	}
	if err := m.RemovePod(ctx, pod.UID); err != nil {
		t.Fatal(err)
	}
	if all, _ := m.GetPods(ctx, true); findRunningPod(all, pod.UID) != nil {
		t.Error("pod left on the runtime")
	}
}
