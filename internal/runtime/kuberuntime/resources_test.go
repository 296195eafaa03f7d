package kuberuntime

import (
	"context"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodelet/nodelet/internal/podspec/downward"
	"github.com/nodelet/nodelet/internal/runtime/containeropts"
)

func resources(req, lim map[v1.ResourceName]string) v1.ResourceRequirements {
	r := v1.ResourceRequirements{Requests: v1.ResourceList{}, Limits: v1.ResourceList{}}
	for k, v := range req {
		r.Requests[k] = resource.MustParse(v)
	}
	for k, v := range lim {
		r.Limits[k] = resource.MustParse(v)
	}
	return r
}

func TestLinuxResourcesByQoS(t *testing.T) {
	capacity := downward.Capacity{MilliCPU: 2000, MemoryBytes: 4 << 30}
	tests := []struct {
		name    string
		res     v1.ResourceRequirements
		wantQoS v1.PodQOSClass
		wantOOM int64
		wantRes runtimeapi.LinuxContainerResources
	}{
		{"best effort", v1.ResourceRequirements{}, v1.PodQOSBestEffort, 1000,
			runtimeapi.LinuxContainerResources{CpuShares: 2}},
		{"guaranteed by limits only", resources(nil, map[v1.ResourceName]string{"cpu": "500m", "memory": "256Mi"}),
			v1.PodQOSGuaranteed, -997,
			runtimeapi.LinuxContainerResources{CpuShares: 512, CpuPeriod: 100000, CpuQuota: 50000, MemoryLimitInBytes: 256 << 20}},
		{"burstable", resources(map[v1.ResourceName]string{"cpu": "1", "memory": "1Gi"}, map[v1.ResourceName]string{"memory": "2Gi"}),
			v1.PodQOSBurstable, 1000 - 1000/4,
			runtimeapi.LinuxContainerResources{CpuShares: 1024, MemoryLimitInBytes: 2 << 30}},
		{"tiny cpu", resources(map[v1.ResourceName]string{"cpu": "1m"}, map[v1.ResourceName]string{"cpu": "1m"}),
			v1.PodQOSBurstable, 999,
			runtimeapi.LinuxContainerResources{CpuShares: 2, CpuPeriod: 100000, CpuQuota: 1000}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := newPod("p", v1.Container{Name: "c", Resources: tt.res})
			if got := qosClass(pod); got != tt.wantQoS {
				t.Errorf("QoS %s, want %s", got, tt.wantQoS)
			}
			got := linuxResources(pod, &pod.Spec.Containers[0], capacity, true)
			tt.wantRes.OomScoreAdj = tt.wantOOM
			if got.CpuShares != tt.wantRes.CpuShares || got.CpuPeriod != tt.wantRes.CpuPeriod || got.CpuQuota != tt.wantRes.CpuQuota ||
				got.MemoryLimitInBytes != tt.wantRes.MemoryLimitInBytes || got.OomScoreAdj != tt.wantRes.OomScoreAdj {
				t.Errorf("resources %+v\nwant %+v", got, &tt.wantRes)
			}
		})
	}
}

func TestSandboxAndSecurityConfig(t *testing.T) {
	e := newTestEnv(t)
	yes, no := true, false
	uid, gid, fsGroup := int64(1000), int64(2000), int64(3000)
	c := ctr("app")
	c.SecurityContext = &v1.SecurityContext{
		Privileged: &yes, ReadOnlyRootFilesystem: &yes, AllowPrivilegeEscalation: &no, RunAsUser: &uid,
		Capabilities: &v1.Capabilities{Add: []v1.Capability{"NET_ADMIN"}, Drop: []v1.Capability{"ALL"}},
	}
	pod := newPod(strings.Repeat("n", 70), c)
	pod.Spec.HostNetwork, pod.Spec.HostPID = true, true
	pod.Spec.SecurityContext = &v1.PodSecurityContext{
		RunAsUser: &gid, RunAsGroup: &gid, FSGroup: &fsGroup, Sysctls: []v1.Sysctl{{Name: "net.core.somaxconn", Value: "1024"}},
	}
	cfg, err := e.mgr.sandboxConfig(context.Background(), pod, 3)
	if err != nil {
		t.Fatal(err)
	}
	// A host-network sandbox shares the node's UTS namespace: runc refuses to set a hostname.
	if cfg.Hostname != "" || cfg.Metadata.Attempt != 3 {
		t.Errorf("host-network hostname %q attempt %d, want none", cfg.Hostname, cfg.Metadata.Attempt)
	}
	sc := cfg.Linux.SecurityContext
	if sc.NamespaceOptions.Network != runtimeapi.NamespaceMode_NODE || sc.NamespaceOptions.Pid != runtimeapi.NamespaceMode_NODE ||
		sc.NamespaceOptions.Ipc != runtimeapi.NamespaceMode_POD || !sc.Privileged || sc.RunAsUser.Value != gid ||
		len(sc.SupplementalGroups) != 1 || sc.SupplementalGroups[0] != fsGroup || cfg.Linux.Sysctls["net.core.somaxconn"] != "1024" {
		t.Errorf("sandbox security %+v sysctls %v", sc, cfg.Linux.Sysctls)
	}

	csc := containeropts.ContainerSecurity(pod, &pod.Spec.Containers[0], containeropts.Seccomp{RootDir: "/var/lib/kubelet"})
	if !csc.Privileged || !csc.ReadonlyRootfs || !csc.NoNewPrivs || csc.RunAsUser.Value != uid || csc.RunAsGroup.Value != gid ||
		csc.Capabilities.AddCapabilities[0] != "NET_ADMIN" || csc.Capabilities.DropCapabilities[0] != "ALL" {
		t.Errorf("container security %+v", csc)
	}

	pod.Spec.HostNetwork = false
	pod.Spec.Hostname = ""
	if name, _ := containeropts.PodHostname(pod); len(name) != 63 {
		t.Errorf("hostname %q not cut to 63", name)
	}
}
