package plugins

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"

	"github.com/nodelet/nodelet/internal/podspec/downward"
	"github.com/nodelet/nodelet/internal/podspec/objects/objectstest"
	"github.com/nodelet/nodelet/internal/volumes"
	"github.com/nodelet/nodelet/internal/volumes/mount/mounttest"
)

// env is every plugin behind a running volume manager over a temp root dir.
type env struct {
	t        *testing.T
	root     string
	objs     *objectstest.Fake
	mounter  *mounttest.Fake
	plugins  []volumes.Plugin
	vm       *volumes.Manager
	recorder *record.FakeRecorder
}

// newEnv builds the env; mutate may change the plugins' deps and the manager's options.
func newEnv(t *testing.T, mutate ...func(*Deps, *volumes.Options)) *env {
	e := &env{t: t, root: t.TempDir(), objs: &objectstest.Fake{}, mounter: mounttest.New(),
		recorder: record.NewFakeRecorder(100)}
	deps := Deps{Objects: e.objs, Mounter: e.mounter, NodeName: "node-1", NodeIP: "192.168.1.10",
		Capacity: downward.Capacity{MilliCPU: 2000, MemoryBytes: 1 << 30}}
	opts := volumes.Options{RootDir: e.root, Recorder: e.recorder, Mounter: e.mounter} // no Pods: volumes stay
	for _, f := range mutate {
		f(&deps, &opts)
	}
	e.plugins = All(deps)
	opts.Plugins = e.plugins
	e.vm = volumes.New(opts)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = e.vm.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return e
}

// mount syncs pod with the volume manager, as the pod sync does.
func (e *env) mount(pod *v1.Pod) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return e.vm.WaitForAttachAndMount(ctx, pod)
}

// hostPath is where the volume manager says pod's volume is.
func (e *env) hostPath(pod *v1.Pod, name string) (string, bool) {
	e.t.Helper()
	path, ro, err := e.vm.HostPath(pod, name)
	if err != nil {
		e.t.Fatalf("volume %s: %v", name, err)
	}
	return path, ro
}

// setUp runs the plugin for pod's volume name directly, as the reconciler would.
func (e *env) setUp(pod *v1.Pod, name string) (volumes.Mount, error) {
	e.t.Helper()
	for i := range pod.Spec.Volumes {
		spec := &volumes.Spec{Volume: &pod.Spec.Volumes[i]}
		if spec.Volume.Name != name {
			continue
		}
		for _, p := range e.plugins {
			if p.CanSetUp(spec) {
				dir := filepath.Join(e.root, "pods", string(pod.UID), "volumes", p.Name(), name)
				return p.SetUp(context.Background(), pod, spec, dir)
			}
		}
	}
	e.t.Fatalf("no plugin for volume %s", name)
	return volumes.Mount{}, nil
}

// plugin is the plugin called name.
func (e *env) plugin(name string) volumes.Plugin {
	for _, p := range e.plugins {
		if p.Name() == name {
			return p
		}
	}
	e.t.Fatalf("no plugin %s", name)
	return nil
}

// mounting returns a pod whose container "app" mounts these volumes at /<name>.
func mounting(name string, vols ...v1.Volume) *v1.Pod {
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name),
			Labels: map[string]string{"app": name}, Annotations: map[string]string{"note": "x"}},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "app"}}, Volumes: vols},
	}
	for _, v := range vols {
		pod.Spec.Containers[0].VolumeMounts = append(pod.Spec.Containers[0].VolumeMounts, v1.VolumeMount{Name: v.Name, MountPath: "/" + v.Name})
	}
	return pod
}

// waitEvent returns the next event the volume manager posts.
func waitEvent(t *testing.T, e *env) string {
	t.Helper()
	select {
	case ev := <-e.recorder.Events:
		return ev
	case <-time.After(5 * time.Second):
		t.Fatal("no event")
		return ""
	}
}
