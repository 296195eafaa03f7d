//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cri "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"

	"github.com/nodelet/nodelet/internal/testutil"
)

// TestNativeSidecars runs two pods with sidecars (init containers with restartPolicy
// Always) side by side:
//   - "mesh" (restartPolicy Always): sidecar proxy with a startup probe, then a regular init
//     container that fails unless the proxy has started, then sidecar logger, then the app,
//     which fails unless both earlier steps are done. The logger crashes once while the app
//     runs and comes back alone. On deletion every container appends its name to a host file
//     when it gets SIGTERM: the app (after its preStop) first, then logger, then proxy.
//   - "job" (restartPolicy Never): a sidecar that ignores SIGTERM beside an app that exits 0;
//     the pod Succeeds and the sidecar's kill does not fail it.
func TestNativeSidecars(t *testing.T) {
	c := joinCluster(t)
	logDir := t.TempDir()
	c.createPod(meshPod(logDir))
	c.createPod(sidecarJobPod())

	// (a) init order: everything ran once, in order, and nothing had to be retried.
	p := c.waitPodPhase("mesh", v1.PodRunning, 60*time.Second)
	testutil.WaitFor(t, 30*time.Second, "mesh Ready with its sidecars", func() (bool, string) {
		p, _ = c.getPod("mesh")
		return condition(p, v1.PodReady) == v1.ConditionTrue && condition(p, v1.PodInitialized) == v1.ConditionTrue,
			fmt.Sprintf("Ready=%s Initialized=%s", condition(p, v1.PodReady), condition(p, v1.PodInitialized))
	})
	inits := p.Status.InitContainerStatuses
	if len(inits) != 3 {
		t.Fatalf("init container statuses %+v", inits)
	}
	for _, i := range []int{0, 2} {
		if cs := inits[i]; cs.State.Running == nil || !ptr.Deref(cs.Started, false) || !cs.Ready {
			t.Errorf("sidecar %s: want running, started and ready, got %+v", cs.Name, cs)
		}
	}
	if cs := inits[1]; cs.State.Terminated == nil || cs.State.Terminated.ExitCode != 0 || cs.RestartCount != 0 || !cs.Ready {
		t.Errorf("init container setup ran before the proxy started or failed: %+v", cs)
	}
	app := p.Status.ContainerStatuses[0]
	if app.RestartCount != 0 || app.State.Running == nil {
		t.Fatalf("app started before its init containers were done: %+v", app)
	}

	// (b) the logger sidecar crashes while the app runs: only the logger is restarted.
	execIn(t, app.ContainerID, "touch", "/shared/crash")
	testutil.WaitFor(t, 30*time.Second, "logger restarted", func() (bool, string) {
		p, _ = c.getPod("mesh")
		cs := p.Status.InitContainerStatuses[2]
		return cs.RestartCount >= 1 && cs.State.Running != nil && cs.LastTerminationState.Terminated != nil,
			fmt.Sprintf("restarts %d state %+v", cs.RestartCount, cs.State)
	})
	if got := p.Status.InitContainerStatuses[2].LastTerminationState.Terminated.ExitCode; got != 3 {
		t.Errorf("logger's last exit code %d, want 3", got)
	}
	if now := p.Status.ContainerStatuses[0]; now.RestartCount != 0 || now.ContainerID != app.ContainerID {
		t.Errorf("app container restarted with its sidecar: %+v", now)
	}
	if p.Status.Phase != v1.PodRunning {
		t.Errorf("phase %s while a sidecar restarts, want Running", p.Status.Phase)
	}

	// (c) the Job-style pod completed by its app container alone.
	job := c.waitPodPhase("job", v1.PodSucceeded, 60*time.Second)
	if cs := job.Status.ContainerStatuses[0]; cs.State.Terminated == nil || cs.State.Terminated.ExitCode != 0 {
		t.Errorf("job container %+v", cs)
	}
	testutil.WaitFor(t, 20*time.Second, "job's sidecar stopped", func() (bool, string) {
		job, _ = c.getPod("job")
		cs := job.Status.InitContainerStatuses[0]
		return cs.State.Terminated != nil, fmt.Sprintf("%+v", cs.State)
	})
	if code := job.Status.InitContainerStatuses[0].State.Terminated.ExitCode; code != 137 {
		t.Errorf("job sidecar exit code %d, want 137 (it ignores SIGTERM)", code)
	}
	if job.Status.Phase != v1.PodSucceeded || condition(job, v1.PodReady) != v1.ConditionFalse {
		t.Errorf("job phase %s Ready %s after its sidecar stopped", job.Status.Phase, condition(job, v1.PodReady))
	}

	// (d) termination order on deletion.
	ctx, cancel := criCtx()
	defer cancel()
	if err := c.admin.CoreV1().Pods(c.ns).Delete(ctx, "mesh", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	c.waitPodGone("mesh", 30*time.Second)
	data, err := os.ReadFile(filepath.Join(logDir, "order"))
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Fields(string(data))
	if want := []string{"app-prestop", "app", "logger", "proxy"}; !slices.Equal(got, want) {
		t.Errorf("termination order %v, want %v", got, want)
	}
}

// loopUntilTerm is a shell loop that appends name to /log/order when it gets SIGTERM (after
// onTerm) and exits 0.
func loopUntilTerm(name, onTerm, body string) string {
	return fmt.Sprintf("trap '%s echo %s >> /log/order; exit 0' TERM; while true; do %s sleep 1 & wait $!; done", onTerm, name, body)
}

func meshPod(logDir string) *v1.Pod {
	p := podSpec("mesh", "")
	p.Spec.TerminationGracePeriodSeconds = ptr.To[int64](15)
	p.Spec.Volumes = []v1.Volume{
		{Name: "shared", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
		{Name: "log", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: logDir}}},
	}
	mounts := []v1.VolumeMount{{Name: "shared", MountPath: "/shared"}, {Name: "log", MountPath: "/log"}}
	shell := func(name, script string) v1.Container {
		return v1.Container{Name: name, Image: busybox, ImagePullPolicy: v1.PullIfNotPresent,
			Command: []string{"sh", "-c", script}, VolumeMounts: mounts}
	}
	always := ptr.To(v1.ContainerRestartPolicyAlways)
	proxy := shell("proxy", "sleep 2; touch /shared/proxy-up; "+loopUntilTerm("proxy", "", ""))
	proxy.RestartPolicy = always
	proxy.StartupProbe = &v1.Probe{PeriodSeconds: 1, FailureThreshold: 60,
		ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"test", "-e", "/shared/proxy-up"}}}}
	setup := shell("setup", "test -e /shared/proxy-up || exit 1; sleep 1; touch /shared/setup-done")
	logger := shell("logger", loopUntilTerm("logger", "", "if [ -e /shared/crash ]; then rm /shared/crash; exit 3; fi;"))
	logger.RestartPolicy = always
	logger.ReadinessProbe = &v1.Probe{PeriodSeconds: 1,
		ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"true"}}}}
	app := shell("app", "test -e /shared/setup-done || exit 1; "+loopUntilTerm("app", "sleep 1;", ""))
	app.Lifecycle = &v1.Lifecycle{PreStop: &v1.LifecycleHandler{
		Exec: &v1.ExecAction{Command: []string{"sh", "-c", "echo app-prestop >> /log/order"}}}}
	p.Spec.InitContainers = []v1.Container{proxy, setup, logger}
	p.Spec.Containers = []v1.Container{app}
	return p
}

func sidecarJobPod() *v1.Pod {
	p := podSpec("job", "sleep 2")
	p.Spec.RestartPolicy = v1.RestartPolicyNever
	p.Spec.TerminationGracePeriodSeconds = ptr.To[int64](2)
	p.Spec.InitContainers = []v1.Container{{
		Name: "helper", Image: busybox, ImagePullPolicy: v1.PullIfNotPresent,
		// PID 1 without a handler ignores SIGTERM: the kill ends in SIGKILL (137).
		Command: []string{"sleep", "3600"}, RestartPolicy: ptr.To(v1.ContainerRestartPolicyAlways),
	}}
	return p
}

// execIn runs cmd in the container ("containerd://<id>" as the API shows it).
func execIn(t *testing.T, containerID string, cmd ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	id := containerID[strings.Index(containerID, "://")+3:]
	resp, err := rt.ExecSync(ctx, &cri.ExecSyncRequest{ContainerId: id, Cmd: cmd, Timeout: 5})
	if err != nil || resp.ExitCode != 0 {
		t.Fatalf("exec %v: %v %+v", cmd, err, resp)
	}
}
