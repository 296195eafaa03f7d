package kuberuntime

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"

	"github.com/nodelet/nodelet/internal/runtime/userns"
)

// sidecarResizePod is an app container beside a sidecar, both sized; the sidecar's memory
// resize policy is restart.
func sidecarResizePod(sidecarCPU, sidecarMem string) *v1.Pod {
	restart := v1.ContainerResizePolicy{ResourceName: v1.ResourceMemory, RestartPolicy: v1.RestartContainer}
	pod := newPod("mesh", sized(ctr("app", "sleep"), limits("500m", "64Mi")))
	pod.Spec.InitContainers = []v1.Container{sized(sidecarCtr("proxy"), limits(sidecarCPU, sidecarMem), restart)}
	return pod
}

// A running sidecar (restartable init container) is resized as an app container is: a cpu
// change goes through UpdateContainerResources without a restart; a memory change under
// RestartContainer restarts the sidecar alone.
func TestResizeRunningSidecar(t *testing.T) {
	e, actuated, cg := newResizeEnv(t)
	pod := sidecarResizePod("250m", "32Mi")
	e.sync(pod) // the sidecar
	e.sync(pod) // the app, once the sidecar runs
	proxy, app := e.running("proxy"), e.running("app")
	cg.current = PodCgroupConfig{CPUShares: 768, CPUQuota: 75000, Memory: 96 << 20}

	cpu := sidecarResizePod("400m", "32Mi")
	res := e.sync(cpu)
	if res.Err != nil || !res.Resized || res.ResizeErr != nil {
		t.Fatalf("cpu resize: err %v resized %v resizeErr %v", res.Err, res.Resized, res.ResizeErr)
	}
	if e.running("proxy").ID != proxy.ID || e.running("app").ID != app.ID || e.fake.CountCalls("StopContainer") != 0 {
		t.Fatal("an in-place cpu resize of the sidecar restarted a container")
	}
	if n := e.fake.CountCalls("UpdateContainerResources"); n != 1 {
		t.Fatalf("%d UpdateContainerResources calls, want 1 (the sidecar)", n)
	}
	if q := e.running("proxy").Config.Linux.Resources.CpuQuota; q != 40000 {
		t.Errorf("sidecar cpu quota %d, want 40000", q)
	}
	if r, _ := actuated.Actuated(pod.UID, "proxy"); r.Limits.Cpu().String() != "400m" {
		t.Errorf("sidecar's actuated resources %v", r)
	}
	if res := e.sync(cpu); res.Resized {
		t.Error("a finished sidecar resize was applied again")
	}

	mem := sidecarResizePod("400m", "48Mi")
	if res := e.sync(mem); res.Err != nil || !res.Resized {
		t.Fatalf("memory resize: %v resized=%v", res.Err, res.Resized)
	}
	now := e.running("proxy")
	if now.ID == proxy.ID || now.Config.Metadata.Attempt != 1 || now.Config.Linux.Resources.MemoryLimitInBytes != 48<<20 {
		t.Fatalf("want a new sidecar instance, attempt 1, with 48Mi; got %s attempt %d memory %d",
			now.ID, now.Config.Metadata.Attempt, now.Config.Linux.Resources.MemoryLimitInBytes)
	}
	if e.running("app").ID != app.ID {
		t.Error("the sidecar's RestartContainer resize restarted the app container")
	}
	if !hasEvent(e.events(), "Normal Killing Container proxy resize requires restart") {
		t.Error("no Killing event for the sidecar's restart")
	}
	if res := e.sync(mem); res.Resized || len(e.containersNamed("proxy")) != 2 {
		t.Errorf("after the restart: resized %v, %d proxy instances", res.Resized, len(e.containersNamed("proxy")))
	}
}

// Init containers, regular and sidecar, get the pod's user namespace and the same
// recursiveReadOnly resolution of their mounts as app containers.
func TestInitContainersGetUserNamespaceAndRecursiveReadOnly(t *testing.T) {
	e, ranges := usernsEnv(t)
	e.reportFeatures([]*runtimeapi.RuntimeHandler{{Name: "", Features: &runtimeapi.RuntimeHandlerFeatures{
		UserNamespaces: true, RecursiveReadOnlyMounts: true,
	}}}, nil)
	pod := usernsPod("inits")
	ro := []v1.VolumeMount{
		{Name: "data", MountPath: "/data"},
		{Name: "data", MountPath: "/ro", ReadOnly: true, RecursiveReadOnly: ptr.To(v1.RecursiveReadOnlyEnabled)},
	}
	setup, proxy := ctr("setup", "true"), sidecarCtr("proxy")
	setup.VolumeMounts, proxy.VolumeMounts = ro, ro
	pod.Spec.InitContainers = []v1.Container{setup, proxy}

	e.sync(pod)
	e.exit("setup", 0)
	e.sync(pod)
	e.sync(pod)
	e.running("app")
	wantPodUserNamespace(t, e, pod, ranges.Allocated()[pod.UID])
	for _, name := range []string{"setup", "proxy"} {
		found := false
		for _, m := range e.containersNamed(name)[0].Config.Mounts {
			if m.ContainerPath == "/ro" {
				found = true
				if !m.Readonly || !m.RecursiveReadOnly {
					t.Errorf("%s: /ro mount %v, want recursive read-only", name, m)
				}
			}
		}
		if !found {
			t.Errorf("%s: no /ro mount", name)
		}
	}
	if r := ranges.Allocated()[pod.UID]; r.Length != userns.IDsPerPod {
		t.Errorf("pod range %+v", r)
	}
}
