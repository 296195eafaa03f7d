package kuberuntime

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/flowcontrol"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodelet/nodelet/internal/podspec/downward"
	"github.com/nodelet/nodelet/internal/runtime/container"
	"github.com/nodelet/nodelet/internal/runtime/cri"
	"github.com/nodelet/nodelet/internal/runtime/cri/fakecri"
)

const testImage = "nodelet.local/busybox:1.36"

// testEnv is a manager over a fake CRI with a fake clock shared by the fake and the back-off.
type testEnv struct {
	t        *testing.T
	fake     *fakecri.Fake
	mgr      *Manager
	recorder *record.FakeRecorder
	clock    *clocktesting.FakeClock
	backoff  *flowcontrol.Backoff
	rootDir  string
	logsDir  string
}

func newTestEnv(t *testing.T, mutate ...func(*Options)) *testEnv {
	t.Helper()
	fake, endpoint := fakecri.Start(t)
	client, err := cri.Connect(endpoint, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close() })
	fake.AddImage(testImage)
	clock := clocktesting.NewFakeClock(time.Now())
	fake.SetClock(clock)
	dir := t.TempDir()
	resolv := filepath.Join(dir, "resolv.conf")
	if err := os.WriteFile(resolv, []byte("nameserver 10.0.0.53\nsearch example.com\noptions timeout:2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e := &testEnv{
		t: t, fake: fake, recorder: record.NewFakeRecorder(500), clock: clock,
		backoff: flowcontrol.NewFakeBackOff(10*time.Second, 300*time.Second, clock),
		rootDir: filepath.Join(dir, "root"), logsDir: filepath.Join(dir, "logs"),
	}
	opts := Options{
		CRI: client, RootDir: e.rootDir, PodLogsDir: e.logsDir, Recorder: e.recorder,
		Capacity:         downward.Capacity{MilliCPU: 4000, MemoryBytes: 8 << 30},
		ContainerLogsDir: filepath.Join(dir, "containers"),
		ResolvConf:       resolv, NodeName: "node-1", NodeIP: "192.168.1.10",
		Volumes: fakeVolumes{root: e.rootDir},
	}
	for _, f := range mutate {
		f(&opts)
	}
	m, err := NewManager(opts)
	if err != nil {
		t.Fatal(err)
	}
	e.mgr = m
	return e
}

// status reads the pod's runtime status.
func (e *testEnv) status(pod *v1.Pod) *container.PodStatus {
	e.t.Helper()
	st, err := e.mgr.GetPodStatus(context.Background(), pod.UID, pod.Name, pod.Namespace)
	if err != nil {
		e.t.Fatalf("GetPodStatus: %v", err)
	}
	return st
}

// sync reads the status and runs SyncPod, as the pod worker does.
func (e *testEnv) sync(pod *v1.Pod) container.SyncResult {
	e.t.Helper()
	return e.mgr.SyncPod(context.Background(), pod, e.status(pod), e.backoff)
}

func (e *testEnv) events() []string {
	var out []string
	for {
		select {
		case ev := <-e.recorder.Events:
			out = append(out, ev)
		default:
			return out
		}
	}
}

// containersNamed returns the fake's containers with this name, oldest first.
func (e *testEnv) containersNamed(name string) []fakecri.Container {
	var out []fakecri.Container
	for _, c := range e.fake.Containers() {
		if c.Config.Metadata.Name == name {
			out = append(out, c)
		}
	}
	return out
}

// running returns the single running container with this name.
func (e *testEnv) running(name string) fakecri.Container {
	e.t.Helper()
	var found []fakecri.Container
	for _, c := range e.containersNamed(name) {
		if c.State.String() == "CONTAINER_RUNNING" {
			found = append(found, c)
		}
	}
	if len(found) != 1 {
		e.t.Fatalf("want 1 running %q container, found %d (calls %v)", name, len(found), e.fake.Calls())
	}
	return found[0]
}

func (e *testEnv) exit(name string, code int32) {
	e.t.Helper()
	if err := e.fake.ExitContainer(e.running(name).ID, code); err != nil {
		e.t.Fatal(err)
	}
}

func hasEvent(events []string, prefix string) bool {
	for _, ev := range events {
		if strings.HasPrefix(ev, prefix) {
			return true
		}
	}
	return false
}

func newPod(name string, containers ...v1.Container) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: "default", UID: types.UID("uid-" + name),
			Labels: map[string]string{"app": name}, Annotations: map[string]string{"note": "x"},
		},
		Spec: v1.PodSpec{Containers: containers, RestartPolicy: v1.RestartPolicyAlways},
	}
}

func ctr(name string, cmd ...string) v1.Container {
	return v1.Container{Name: name, Image: testImage, Command: cmd, ImagePullPolicy: v1.PullIfNotPresent}
}

// fakeVolumes stands for the volume manager: every volume is where an emptyDir would be,
// with subPath inside; the runtime only hands the paths to CRI.
type fakeVolumes struct{ root string }

func (f fakeVolumes) DevicePath(_ *v1.Pod, name string) (string, error) {
	return "", fmt.Errorf("volume %s has volumeMode Filesystem, but is specified in volumeDevices", name)
}

func (f fakeVolumes) HostPath(pod *v1.Pod, name string) (string, bool, error) {
	for _, v := range pod.Spec.Volumes {
		if v.Name == name {
			return filepath.Join(f.root, "pods", string(pod.UID), "volumes", "kubernetes.io~empty-dir", name), false, nil
		}
	}
	return "", false, fmt.Errorf("volume mount %q: no such volume", name)
}

// SELinuxRelabel answers as for an emptyDir: relabelled.
func (f fakeVolumes) SELinuxRelabel(*v1.Pod, string) bool { return true }

// SubPath stands for the subPath's mount: the path says what the volume manager was asked.
func (f fakeVolumes) SubPath(pod *v1.Pod, container string, index int, name, subPath string) (string, bool, error) {
	if _, _, err := f.HostPath(pod, name); err != nil {
		return "", false, err
	}
	return filepath.Join(f.root, "pods", string(pod.UID), "volume-subpaths", name, container, strconv.Itoa(index), subPath), false, nil
}
