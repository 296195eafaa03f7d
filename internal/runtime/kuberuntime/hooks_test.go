package kuberuntime

import (
	"context"
	"errors"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodelet/nodelet/internal/podspec/podhooks"
)

// sandboxHook, containerHook and resourcesHook are hooks made of a function.
type sandboxHook func(pod *v1.Pod, cfg *runtimeapi.PodSandboxConfig) error

func (f sandboxHook) ApplySandbox(_ context.Context, pod *v1.Pod, cfg *runtimeapi.PodSandboxConfig) error {
	return f(pod, cfg)
}

type containerHook func(pod *v1.Pod, c *v1.Container, cfg *runtimeapi.ContainerConfig) error

func (f containerHook) ApplyContainer(_ context.Context, pod *v1.Pod, c *v1.Container, cfg *runtimeapi.ContainerConfig) error {
	return f(pod, c, cfg)
}

type resourcesHook func(pod *v1.Pod, c *v1.Container, res *runtimeapi.LinuxContainerResources)

func (f resourcesHook) ApplyResources(pod *v1.Pod, c *v1.Container, res *runtimeapi.LinuxContainerResources) {
	f(pod, c, res)
}

// The sandbox hooks reach RunPodSandbox, in their order, each seeing what the one before
// set; a pull ahead of the sandbox runs none (the pod cgroup is made with the sandbox).
func TestSandboxHooksApplyInOrder(t *testing.T) {
	var calls []string
	parent := sandboxHook(func(pod *v1.Pod, cfg *runtimeapi.PodSandboxConfig) error {
		calls = append(calls, "parent")
		cfg.Linux.CgroupParent = "/kubepods/pod" + string(pod.UID)
		return nil
	})
	after := sandboxHook(func(_ *v1.Pod, cfg *runtimeapi.PodSandboxConfig) error {
		calls = append(calls, "after saw "+cfg.Linux.CgroupParent)
		return nil
	})
	e := newTestEnv(t, func(o *Options) { o.Hooks.Sandbox = []podhooks.Sandbox{parent, after} })
	pod := newPod("cg", ctr("app"))
	e.mgr.PullImages(context.Background(), pod, e.status(pod))
	if len(calls) != 0 {
		t.Fatalf("a pull ahead ran the sandbox hooks: %v", calls)
	}
	if res := e.sync(pod); res.Err != nil {
		t.Fatal(res.Err)
	}
	want := "/kubepods/pod" + string(pod.UID)
	if got := e.fake.Sandboxes()[0].Config.Linux.CgroupParent; got != want {
		t.Errorf("cgroup parent %q, want %q", got, want)
	}
	if got := strings.Join(calls, ", "); got != "parent, after saw "+want {
		t.Errorf("hook calls %q", got)
	}
}

func TestSandboxHookFailureFailsTheSandbox(t *testing.T) {
	e := newTestEnv(t, func(o *Options) {
		o.Hooks.Sandbox = []podhooks.Sandbox{sandboxHook(func(*v1.Pod, *runtimeapi.PodSandboxConfig) error {
			return errors.New("pod cgroup: read-only file system")
		})}
	})
	res := e.sync(newPod("cg", ctr("app")))
	if res.Err == nil || !strings.Contains(res.Err.Error(), "read-only file system") {
		t.Fatalf("SyncPod err %v, want the hook's", res.Err)
	}
	if n := len(e.fake.Sandboxes()); n != 0 {
		t.Errorf("%d sandboxes created", n)
	}
}

func TestNoSandboxHookLeavesTheParentEmpty(t *testing.T) {
	e := newTestEnv(t)
	cfg, err := e.mgr.sandboxConfig(context.Background(), newPod("cg", ctr("app")), 0)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Linux.CgroupParent != "" {
		t.Errorf("cgroup parent %q", cfg.Linux.CgroupParent)
	}
}

// The container hooks run in order after the runtime's own config (they see its envs and
// resources) and before the container joins its sandbox's user namespace: a mount a hook adds
// gets the pod's ID mapping like the volume mounts.
func TestContainerHooksApplyInOrderBeforeTheUserNamespace(t *testing.T) {
	var calls []string
	devices := containerHook(func(pod *v1.Pod, c *v1.Container, cfg *runtimeapi.ContainerConfig) error {
		calls = append(calls, "devices "+pod.Name+"/"+c.Name)
		cfg.Mounts = append(cfg.Mounts, &runtimeapi.Mount{ContainerPath: "/run/dev", HostPath: "/var/run/dev"})
		return nil
	})
	cpus := containerHook(func(_ *v1.Pod, _ *v1.Container, cfg *runtimeapi.ContainerConfig) error {
		calls = append(calls, "cpus")
		if len(cfg.Envs) == 0 || cfg.Linux.Resources.CpuShares == 0 || cfg.Mounts[len(cfg.Mounts)-1].ContainerPath != "/run/dev" {
			t.Errorf("hook saw an unfinished config: %v", cfg)
		}
		cfg.Linux.Resources.CpusetCpus = "2-3"
		return nil
	})
	e, _ := usernsEnv(t, func(o *Options) { o.Hooks.Container = []podhooks.Container{devices, cpus} })
	e.reportFeatures([]*runtimeapi.RuntimeHandler{{Name: "", Features: &runtimeapi.RuntimeHandlerFeatures{UserNamespaces: true}}}, nil)
	pod := usernsPod("hooked")
	pod.Spec.Containers[0].Env = []v1.EnvVar{{Name: "A", Value: "1"}}
	if res := e.sync(pod); res.Err != nil {
		t.Fatal(res.Err)
	}
	if got := strings.Join(calls, ", "); got != "devices hooked/app, cpus" {
		t.Errorf("hook calls %q", got)
	}
	cfg := e.running("app").Config
	if got := cfg.Linux.Resources.CpusetCpus; got != "2-3" {
		t.Errorf("cpuset %q, want the hook's 2-3", got)
	}
	for _, m := range cfg.Mounts {
		if m.ContainerPath == "/run/dev" && len(m.UidMappings) == 0 {
			t.Errorf("the hook's mount has no ID mapping: %v", m)
		}
	}
}

func TestContainerHookFailureFailsContainerCreation(t *testing.T) {
	e := newTestEnv(t, func(o *Options) {
		o.Hooks.Container = []podhooks.Container{containerHook(func(*v1.Pod, *v1.Container, *runtimeapi.ContainerConfig) error {
			return errors.New("allocating devices: plugin gone")
		})}
	})
	res := e.sync(newPod("gpu", ctr("app", "sleep", "1")))
	if res.Err == nil || res.Waiting["app"].Reason != ReasonCreateContainerConfigError {
		t.Fatalf("err %v waiting %v, want CreateContainerConfigError", res.Err, res.Waiting)
	}
	if n := len(e.containersNamed("app")); n != 0 {
		t.Errorf("%d containers created without the hook", n)
	}
}

// pinnedNoQuota lifts the quota of the container named "pinned", as the CPU manager's hook
// does for exclusive CPUs.
var pinnedNoQuota = resourcesHook(func(_ *v1.Pod, c *v1.Container, res *runtimeapi.LinuxContainerResources) {
	if c.Name == "pinned" && res.CpuQuota > 0 {
		res.CpuQuota = -1
	}
})

// A resources hook changes the cgroup settings at creation and again on an in-place resize;
// the other containers keep the quota of their limit.
func TestResourcesHooksApplyAtCreationAndResize(t *testing.T) {
	e, _, _ := newResizeEnv(t)
	e.mgr.hooks.Resources = []podhooks.Resources{pinnedNoQuota}
	pod := newPod("g", sized(ctr("pinned", "sleep"), limits("1", "64Mi")), sized(ctr("shared", "sleep"), limits("500m", "64Mi")))
	if res := e.sync(pod); res.Err != nil {
		t.Fatal(res.Err)
	}
	type quota struct{ period, quota int64 }
	check := func(when string, want map[string]quota) {
		t.Helper()
		for name, w := range want {
			res := e.running(name).Config.Linux.Resources
			if got := (quota{res.CpuPeriod, res.CpuQuota}); got != w {
				t.Errorf("%s: %s period/quota %v, want %v", when, name, got, w)
			}
		}
	}
	check("created", map[string]quota{"pinned": {100000, -1}, "shared": {100000, 50000}})
	resized := newPod("g", sized(ctr("pinned", "sleep"), limits("2", "64Mi")), sized(ctr("shared", "sleep"), limits("250m", "64Mi")))
	if res := e.sync(resized); res.Err != nil || !res.Resized {
		t.Fatalf("resize: err %v resized %v", res.Err, res.Resized)
	}
	check("resized", map[string]quota{"pinned": {100000, -1}, "shared": {100000, 25000}})
}

// Without cpuCFSQuota no quota is set, so there is none for a hook to lift.
func TestResourcesHookWithoutCFSQuota(t *testing.T) {
	e := newTestEnv(t, func(o *Options) {
		o.NoCPUQuota = true
		o.Hooks.Resources = []podhooks.Resources{pinnedNoQuota}
	})
	e.sync(newPod("g", sized(ctr("pinned", "sleep"), limits("1", "64Mi"))))
	if res := e.running("pinned").Config.Linux.Resources; res.CpuPeriod != 0 || res.CpuQuota != 0 {
		t.Errorf("period/quota %d/%d, want none", res.CpuPeriod, res.CpuQuota)
	}
}

// prepareHook fails until ready is set, as a DRA manager whose claim is not reserved yet.
type prepareHook struct {
	calls int
	ready bool
}

func (h *prepareHook) PreparePod(context.Context, *v1.Pod) error {
	h.calls++
	if !h.ready {
		return errors.New("pod p(uid) is not allowed to use resource claim gpu(c1)")
	}
	return nil
}

func (h *prepareHook) PrepareFailure() (string, string) {
	return "FailedPrepareDynamicResources", "prepare dynamic resources"
}

// A prepare hook that fails keeps the pod without a sandbox and posts its event; once it
// succeeds the sandbox is made.
func TestAFailedPrepareHookKeepsThePodWaitingWithItsEvent(t *testing.T) {
	h := &prepareHook{}
	e := newTestEnv(t, func(o *Options) { o.Hooks.Prepare = []podhooks.Prepare{h} })
	pod := newPod("dra", ctr("app"))
	if res := e.sync(pod); res.Err == nil {
		t.Fatal("SyncPod succeeded with the prepare hook failing")
	}
	if n := len(e.fake.Sandboxes()); n != 0 {
		t.Fatalf("%d sandboxes created before the claims were prepared", n)
	}
	want := "Warning FailedPrepareDynamicResources Failed to prepare dynamic resources: pod p(uid) is not allowed to use resource claim gpu(c1)"
	found := false
	for len(e.recorder.Events) > 0 && !found {
		found = <-e.recorder.Events == want
	}
	if !found {
		t.Errorf("no event %q", want)
	}
	h.ready = true
	if res := e.sync(pod); res.Err != nil {
		t.Fatal(res.Err)
	}
	if n := len(e.fake.Sandboxes()); n != 1 || h.calls != 2 {
		t.Fatalf("%d sandboxes, %d prepare calls; want 1 and 2", n, h.calls)
	}
}
