package volumes

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
)

const fakePluginName = "example.com~fake"

// fakePlugin sets up emptyDir volumes as directories, failing the first failures attempts.
type fakePlugin struct {
	refresh bool

	mu        sync.Mutex
	failures  int
	setUps    map[string]int // by volume name
	tearDowns []string       // directories
}

func newFakePlugin() *fakePlugin { return &fakePlugin{setUps: map[string]int{}} }

func (*fakePlugin) Name() string          { return fakePluginName }
func (*fakePlugin) CanSetUp(s *Spec) bool { return s.Volume.EmptyDir != nil }
func (f *fakePlugin) RefreshOnSync() bool { return f.refresh }
func (f *fakePlugin) setUpsOf(name string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.setUps[name]
}
func (f *fakePlugin) failNext(n int) { f.mu.Lock(); defer f.mu.Unlock(); f.failures = n }
func (f *fakePlugin) tornDown() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.tearDowns...)
}

func (f *fakePlugin) SetUp(_ context.Context, _ *v1.Pod, s *Spec, dir string) (Mount, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.setUps[s.Volume.Name]++
	if f.failures > 0 {
		f.failures--
		return Mount{}, errors.New("disk on fire")
	}
	return Mount{Path: dir}, os.MkdirAll(dir, 0o755)
}

func (f *fakePlugin) TearDown(_ context.Context, _ types.UID, dir string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tearDowns = append(f.tearDowns, dir)
	return os.RemoveAll(dir)
}

// fakePods says which pods' containers are gone.
type fakePods struct {
	mu   sync.Mutex
	gone map[types.UID]bool
}

func (f *fakePods) ContainersGone(uid types.UID) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.gone[uid]
}

func (f *fakePods) setGone(uid types.UID) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.gone[uid] = true
}

// fakeMounter has nothing mounted.
type fakeMounter struct{}

func (fakeMounter) IsMountPoint(string) (bool, error)    { return false, nil }
func (fakeMounter) MountTmpfs(string, int64) error       { return errors.New("no tmpfs in tests") }
func (fakeMounter) MountHugetlbfs(string, int64) error   { return errors.New("no hugetlbfs in tests") }
func (fakeMounter) MountsUnder(string) ([]string, error) { return nil, nil }
func (fakeMounter) Unmount(string) error                 { return nil }
func (fakeMounter) BindFd(*os.File, string) error        { return errors.New("no bind mounts in tests") }

type testEnv struct {
	m        *Manager
	root     string
	plugin   *fakePlugin
	pods     *fakePods
	clock    *clocktesting.FakeClock
	recorder *record.FakeRecorder
}

func newTestEnv(t *testing.T, root string, mutate ...func(*Options)) *testEnv {
	e := &testEnv{root: root, plugin: newFakePlugin(), pods: &fakePods{gone: map[types.UID]bool{}},
		clock: clocktesting.NewFakeClock(time.Now()), recorder: record.NewFakeRecorder(100)}
	opts := Options{RootDir: root, Plugins: []Plugin{e.plugin}, Pods: e.pods, Recorder: e.recorder,
		Mounter: fakeMounter{}, Clock: e.clock}
	for _, f := range mutate {
		f(&opts)
	}
	e.m = New(opts)
	return e
}

// run runs the reconciler until the test ends.
func (e *testEnv) run(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = e.m.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}

// reconcile runs one pass and waits for the operations it started.
func (e *testEnv) reconcile() {
	e.m.rec.reconcile(context.Background())
	e.m.rec.ops.Wait()
}

func (e *testEnv) volumeDir(uid types.UID, name string) string {
	return filepath.Join(e.root, "pods", string(uid), "volumes", fakePluginName, name)
}

// podWith returns a pod whose container mounts emptyDir volumes of these names.
func podWith(uid string, names ...string) *v1.Pod {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p-" + uid, Namespace: "ns", UID: types.UID(uid)},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "app"}}}}
	for _, n := range names {
		pod.Spec.Volumes = append(pod.Spec.Volumes, v1.Volume{Name: n, VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}})
		pod.Spec.Containers[0].VolumeMounts = append(pod.Spec.Containers[0].VolumeMounts, v1.VolumeMount{Name: n, MountPath: "/" + n})
	}
	return pod
}

func events(r *record.FakeRecorder) []string {
	var out []string
	for {
		select {
		case ev := <-r.Events:
			out = append(out, ev)
		default:
			return out
		}
	}
}
