package kuberuntime

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"

	"github.com/nodelet/nodelet/internal/runtime/container"
	"github.com/nodelet/nodelet/internal/testutil"
)

func TestKillPodStopsContainersAndSandbox(t *testing.T) {
	tests := []struct {
		name        string
		grace       int64
		wantTimeout int64
	}{
		{"grace passed through", 30, 30},
		{"minimum grace", 0, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newTestEnv(t)
			pod := newPod("web", ctr("a", "sleep", "1d"), ctr("b", "sleep", "1d"))
			e.sync(pod)
			if err := e.mgr.KillPod(context.Background(), pod, nil, tt.grace); err != nil {
				t.Fatal(err)
			}
			for _, c := range e.fake.Containers() {
				if c.State != runtimeapi.ContainerState_CONTAINER_EXITED || c.StopTimeout != tt.wantTimeout {
					t.Errorf("container %s: state %s stop timeout %d, want exited and %d",
						c.Config.Metadata.Name, c.State, c.StopTimeout, tt.wantTimeout)
				}
			}
			if sb := e.fake.Sandboxes()[0]; sb.State != runtimeapi.PodSandboxState_SANDBOX_NOTREADY {
				t.Errorf("sandbox state %s", sb.State)
			}
			if evs := e.events(); !hasEvent(evs, "Normal Killing Stopping container a") || !hasEvent(evs, "Normal Killing Stopping container b") {
				t.Errorf("events %q lack Killing", evs)
			}
		})
	}
}

func TestKillPodRunsPreStopExec(t *testing.T) {
	e := newTestEnv(t)
	c := ctr("app", "sleep", "1d")
	c.Lifecycle = &v1.Lifecycle{PreStop: &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"sh", "-c", "drain"}}}}
	pod := newPod("web", c)
	e.sync(pod)
	id := e.running("app").ID
	if err := e.mgr.KillPod(context.Background(), pod, nil, 10); err != nil {
		t.Fatal(err)
	}
	execs := e.fake.Execs()
	if len(execs) != 1 || execs[0].ContainerID != id || !reflect.DeepEqual(execs[0].Cmd, []string{"sh", "-c", "drain"}) {
		t.Fatalf("execs = %+v", execs)
	}
	if execs[0].Timeout <= 10 {
		t.Errorf("preStop exec timeout %d, want past the grace period: the container's stop ends the hook", execs[0].Timeout)
	}
	if got, _ := e.fake.Container(id); got.StopTimeout < 2 || got.StopTimeout > 10 {
		t.Errorf("stop timeout %d, want what is left of 10s", got.StopTimeout)
	}
	callsOrder := filterCalls(e.fake.Calls(), "ExecSync", "StopContainer", "StopPodSandbox")
	if want := []string{"ExecSync", "StopContainer", "StopPodSandbox"}; !reflect.DeepEqual(callsOrder, want) {
		t.Errorf("calls %v, want %v", callsOrder, want)
	}
}

// A preStop hook still running when the grace period ends is not cut short: the kill goes on
// to stop the container, which ends the hook (upstream waits the grace period, no longer, and
// leaves the hook to run; a runtime exec timeout at the grace would kill it first).
func TestPreStopHookOutlivingItsGraceIsEndedByTheStop(t *testing.T) {
	e := newTestEnv(t)
	c := ctr("app", "sleep", "1d")
	c.Lifecycle = &v1.Lifecycle{PreStop: &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"drain", "forever"}}}}
	pod := newPod("web", c)
	e.sync(pod)
	id := e.running("app").ID
	release := make(chan struct{})
	ended := make(chan struct{})
	e.fake.SetExecHandler(func(string, []string) ([]byte, int32, error) {
		defer close(ended)
		<-release // the hook loops until its container dies
		return nil, 137, nil
	})
	start := time.Now()
	killed := make(chan error, 1)
	go func() { killed <- e.mgr.KillPod(context.Background(), pod, nil, 2) }()
	select {
	case err := <-killed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(15 * time.Second):
		close(release)
		t.Fatal("KillPod waited for the hook past the grace period")
	}
	if took := time.Since(start); took < 2*time.Second {
		t.Errorf("KillPod took %v, want the 2 s grace period for the hook", took)
	}
	select {
	case <-ended:
		t.Fatal("the hook's exec ended before the container was stopped")
	default:
	}
	if got, _ := e.fake.Container(id); got.State != runtimeapi.ContainerState_CONTAINER_EXITED {
		t.Errorf("container state %v after KillPod, want exited", got.State)
	}
	// The grace period's end is no hook failure (upstream only logs it).
	events := e.events()
	if slices.ContainsFunc(events, func(ev string) bool { return strings.Contains(ev, "FailedPreStopHook") }) {
		t.Errorf("a hook failure reported while the hook still ran: %q", events)
	}
	close(release) // the stop killed the hook's process
	<-ended
	testutil.Eventually(t, "the late hook failure reported", func() bool {
		events = append(events, e.events()...)
		return slices.ContainsFunc(events, func(ev string) bool { return strings.Contains(ev, "FailedPreStopHook") })
	})
}

func TestKillOrphanUsesAnnotations(t *testing.T) {
	e := newTestEnv(t)
	c := ctr("app", "sleep", "1d")
	c.Lifecycle = &v1.Lifecycle{PreStop: &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"bye"}}}}
	pod := newPod("web", c)
	pod.Spec.TerminationGracePeriodSeconds = ptr.To[int64](12)
	e.sync(pod)

	// The pod spec is gone: kill what GetPods found, with the pod's own grace (-1).
	pods, err := e.mgr.GetPods(context.Background(), false)
	if err != nil || len(pods) != 1 {
		t.Fatalf("GetPods: %v %v", pods, err)
	}
	if err := e.mgr.KillPod(context.Background(), nil, pods[0], -1); err != nil {
		t.Fatal(err)
	}
	if execs := e.fake.Execs(); len(execs) != 1 || execs[0].Cmd[0] != "bye" {
		t.Errorf("preStop from annotation not run: %+v", execs)
	}
	if got := e.fake.Containers()[0].StopTimeout; got < 2 || got > 12 {
		t.Errorf("stop timeout %d, want within the annotated 12s", got)
	}
}

func TestKillPodReportsFailures(t *testing.T) {
	e := newTestEnv(t)
	pod := newPod("web", ctr("app", "sleep", "1d"))
	e.sync(pod)
	e.fake.FailNext("StopContainer", errors.New("runtime busy"))
	if err := e.mgr.KillPod(context.Background(), pod, nil, 5); err == nil {
		t.Fatal("KillPod hid a StopContainer failure")
	}
	// The retry succeeds.
	if err := e.mgr.KillPod(context.Background(), pod, nil, 5); err != nil {
		t.Fatal(err)
	}
	if c := e.fake.Containers()[0]; c.State != runtimeapi.ContainerState_CONTAINER_EXITED {
		t.Errorf("container state %s", c.State)
	}
}

func TestRemovePodRemovesEverything(t *testing.T) {
	e := newTestEnv(t)
	pod := newPod("web", ctr("app", "sleep", "1d"))
	other := newPod("other", ctr("keep", "sleep", "1d"))
	e.sync(pod)
	e.sync(other)
	e.exit("app", 1)
	e.sync(pod) // a second instance of app
	ctx := context.Background()
	if err := e.mgr.KillPod(ctx, pod, nil, 0); err != nil {
		t.Fatal(err)
	}
	if err := e.mgr.RemovePod(ctx, pod.UID); err != nil {
		t.Fatal(err)
	}
	for _, c := range e.fake.Containers() {
		if c.Config.Labels[container.LabelPodUID] == string(pod.UID) {
			t.Errorf("container %s left", c.ID)
		}
	}
	sbs := e.fake.Sandboxes()
	if len(sbs) != 1 || sbs[0].Config.Metadata.Uid != string(other.UID) {
		t.Errorf("sandboxes left: %+v", sbs)
	}
	if len(e.containersNamed("keep")) != 1 {
		t.Error("the other pod's container was removed")
	}
	for _, dir := range []string{filepath.Join(e.rootDir, "pods", "uid-web"), filepath.Join(e.logsDir, "default_web_uid-web")} {
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("%s left behind (%v)", dir, err)
		}
	}
	if _, err := os.Stat(filepath.Join(e.logsDir, "default_other_uid-other")); err != nil {
		t.Errorf("other pod's logs: %v", err)
	}
	st := e.status(pod)
	if len(st.Sandboxes)+len(st.Containers) != 0 {
		t.Errorf("status after removal %+v", st)
	}
}

func TestKillPodRunsPreStopHTTP(t *testing.T) {
	hits := make(chan string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits <- r.URL.Path + " " + r.Header.Get("X-Drain")
	}))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	port, _ := strconv.Atoi(u.Port())

	e := newTestEnv(t)
	c := ctr("app", "sleep", "1d")
	c.Ports = []v1.ContainerPort{{Name: "admin", ContainerPort: int32(port)}}
	c.Lifecycle = &v1.Lifecycle{PreStop: &v1.LifecycleHandler{HTTPGet: &v1.HTTPGetAction{
		Host: "127.0.0.1", Path: "drain", Port: intstr.FromString("admin"),
		HTTPHeaders: []v1.HTTPHeader{{Name: "X-Drain", Value: "now"}},
	}}}
	pod := newPod("web", c)
	e.sync(pod)
	if err := e.mgr.KillPod(context.Background(), pod, nil, 5); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-hits:
		if got != "/drain now" {
			t.Errorf("preStop request %q", got)
		}
	default:
		t.Fatal("preStop httpGet not sent")
	}
}

// A UID that is not one path component never names a host path to remove.
func TestRemovePodRefusesUnsafeUID(t *testing.T) {
	e := newTestEnv(t)
	victim := filepath.Join(filepath.Dir(e.rootDir), "victim")
	for _, dir := range []string{filepath.Join(victim, "containers"), filepath.Join(e.logsDir, "x_y_..")} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, uid := range []types.UID{"../../victim", "..", "a/../../victim"} {
		if err := e.mgr.RemovePod(context.Background(), uid); err == nil {
			t.Errorf("RemovePod(%q) accepted", uid)
		}
	}
	for _, dir := range []string{filepath.Join(victim, "containers"), filepath.Join(e.logsDir, "x_y_..")} {
		if _, err := os.Stat(dir); err != nil {
			t.Errorf("%s removed: %v", dir, err)
		}
	}
}
