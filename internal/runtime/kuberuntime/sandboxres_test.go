package kuberuntime

import (
	"testing"

	"reflect"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func quantities(pairs ...string) v1.ResourceList {
	out := v1.ResourceList{}
	for i := 0; i < len(pairs); i += 2 {
		out[v1.ResourceName(pairs[i])] = resource.MustParse(pairs[i+1])
	}
	return out
}

// runSandbox syncs pod once and returns the config its sandbox was run with.
func (e *testEnv) runSandbox(pod *v1.Pod) *runtimeapi.PodSandboxConfig {
	e.t.Helper()
	e.sync(pod)
	sbs := e.fake.Sandboxes()
	if len(sbs) != 1 {
		e.t.Fatalf("want 1 sandbox, got %d (calls %v)", len(sbs), e.fake.Calls())
	}
	return sbs[0].Config
}

func wantResources(t *testing.T, what string, got, want *runtimeapi.LinuxContainerResources) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s:\n got %v\nwant %v", what, got, want)
	}
}

// The numbers are what upstream 1.33's kuberuntime sends for the same pod: requests and
// limits folded as PodRequests/PodLimits do (init containers' peak against the sum of the
// rest, a container without a limit adding nothing), shares and quota from them, the CFS
// period always set, the overhead counted as both request and limit.
func TestSandboxGetsPodTotalsAndOverheadAsUpstream(t *testing.T) {
	a := ctr("a", "sleep", "1")
	a.Resources = v1.ResourceRequirements{Requests: quantities("cpu", "250m", "memory", "64Mi"), Limits: quantities("cpu", "500m", "memory", "128Mi")}
	b := ctr("b", "sleep", "1")
	b.Resources = v1.ResourceRequirements{Requests: quantities("cpu", "100m")}
	init := ctr("init", "true")
	init.Resources = v1.ResourceRequirements{Requests: quantities("cpu", "1"), Limits: quantities("cpu", "1", "memory", "256Mi")}
	pod := newPod("totals", a, b)
	pod.Spec.InitContainers = []v1.Container{init}
	pod.Spec.Overhead = quantities("cpu", "100m", "memory", "32Mi")

	cfg := newTestEnv(t).runSandbox(pod)
	wantResources(t, "resources", cfg.Linux.Resources, &runtimeapi.LinuxContainerResources{
		CpuShares: 1024, CpuPeriod: 100000, CpuQuota: 100000, MemoryLimitInBytes: 256 << 20,
	})
	wantResources(t, "overhead", cfg.Linux.Overhead, &runtimeapi.LinuxContainerResources{
		CpuShares: 102, CpuPeriod: 100000, CpuQuota: 10000, MemoryLimitInBytes: 32 << 20,
	})
}

func TestSandboxResourcesOfABestEffortPod(t *testing.T) {
	pod := newPod("besteffort", ctr("a", "sleep", "1"))
	cfg := newTestEnv(t).runSandbox(pod)
	wantResources(t, "resources", cfg.Linux.Resources, &runtimeapi.LinuxContainerResources{CpuShares: 2, CpuPeriod: 100000})
	wantResources(t, "overhead", cfg.Linux.Overhead, &runtimeapi.LinuxContainerResources{})

	// Without cpuCFSQuota no period goes either; on cgroup v2 the OOM group goes with both.
	e := newTestEnv(t, func(o *Options) {
		o.NoCPUQuota = true
		o.Memory = MemorySettings{CgroupV2: true, OOMGroup: true}
	})
	cfg = e.runSandbox(newPod("besteffort", ctr("a", "sleep", "1")))
	group := map[string]string{"memory.oom.group": "1"}
	wantResources(t, "resources", cfg.Linux.Resources, &runtimeapi.LinuxContainerResources{CpuShares: 2, Unified: group})
	wantResources(t, "overhead", cfg.Linux.Overhead, &runtimeapi.LinuxContainerResources{})
}

func TestSandboxAndContainersGetSELinuxOptions(t *testing.T) {
	own := ctr("own", "sleep", "1")
	own.SecurityContext = &v1.SecurityContext{SELinuxOptions: &v1.SELinuxOptions{Type: "container_t", Level: "s0:c3,c4"}}
	pod := newPod("selinux", ctr("inherits", "sleep", "1"), own)
	pod.Spec.SecurityContext = &v1.PodSecurityContext{SELinuxOptions: &v1.SELinuxOptions{User: "system_u", Role: "system_r", Type: "spc_t", Level: "s0:c1,c2"}}
	e := newTestEnv(t)
	cfg := e.runSandbox(pod)
	podLabel := &runtimeapi.SELinuxOption{User: "system_u", Role: "system_r", Type: "spc_t", Level: "s0:c1,c2"}
	if got := cfg.Linux.SecurityContext.SelinuxOptions; !reflect.DeepEqual(got, podLabel) {
		t.Errorf("sandbox SELinux options %v, want %v", got, podLabel)
	}
	for name, want := range map[string]*runtimeapi.SELinuxOption{
		"inherits": podLabel,
		"own":      {Type: "container_t", Level: "s0:c3,c4"}, // the container's replace the pod's whole
	} {
		if got := e.running(name).Config.Linux.SecurityContext.SelinuxOptions; !reflect.DeepEqual(got, want) {
			t.Errorf("container %s SELinux options %v, want %v", name, got, want)
		}
	}
}

// On an SELinux host upstream asks the runtime to relabel the volumes that say so, /etc/hosts
// and the termination message file; elsewhere (these hosts) nothing.
func TestMountsAskForRelabellingOnSELinuxHosts(t *testing.T) {
	for _, selinux := range []bool{false, true} {
		c := ctr("a", "sleep", "1")
		c.VolumeMounts = []v1.VolumeMount{{Name: "data", MountPath: "/data"}}
		pod := newPod("relabel", c)
		pod.Spec.Volumes = []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}}
		e := newTestEnv(t, func(o *Options) { o.SELinux = selinux })
		e.sync(pod)
		mounts := e.running("a").Config.Mounts
		if len(mounts) != 3 {
			t.Fatalf("want the volume, /etc/hosts and the termination file, got %v", mounts)
		}
		for _, m := range mounts {
			if m.SelinuxRelabel != selinux {
				t.Errorf("SELinux host %v: mount %s relabel %v", selinux, m.ContainerPath, m.SelinuxRelabel)
			}
		}
	}
}
