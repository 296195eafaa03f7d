package app

import (
	"path/filepath"
	"testing"

	"k8s.io/utils/ptr"

	"github.com/nodelet/nodelet/internal/config"
	"github.com/nodelet/nodelet/internal/host/machine"
	"github.com/nodelet/nodelet/internal/runtime/kuberuntime"
)

// memoryHost lays out a fake cgroup tree and /proc files for memorySettings and restores the
// real paths after the test.
func memoryHost(t *testing.T, v2, swapController bool) {
	t.Helper()
	saved := hostFiles
	t.Cleanup(func() { hostFiles = saved })
	dir := t.TempDir()
	hostFiles.cgroupRoot = filepath.Join(dir, "cgroup")
	hostFiles.selfCgroup = filepath.Join(dir, "self-cgroup")
	if v2 {
		mustWrite(filepath.Join(hostFiles.cgroupRoot, "cgroup.controllers"), "cpu memory")
		mustWrite(hostFiles.selfCgroup, "0::/system.slice/kubelet.service\n")
		if swapController {
			mustWrite(filepath.Join(hostFiles.cgroupRoot, "system.slice/kubelet.service/memory.swap.max"), "max")
		}
		return
	}
	mustWrite(filepath.Join(hostFiles.cgroupRoot, "memory", "tasks"), "")
	if swapController {
		mustWrite(filepath.Join(hostFiles.cgroupRoot, "memory", "memory.memsw.limit_in_bytes"), "9223372036854771712")
	}
}

func TestMemorySettingsReadTheHostAsUpstream(t *testing.T) {
	tests := []struct {
		name           string
		v2, controller bool
		mutate         func(*config.Config)
		want           kuberuntime.MemorySettings
	}{
		{name: "v1 with memsw", controller: true,
			want: kuberuntime.MemorySettings{SwapController: true}},
		{name: "v1 without memsw"},
		{name: "v2: OOM group by default", v2: true, controller: true,
			want: kuberuntime.MemorySettings{CgroupV2: true, OOMGroup: true, SwapController: true}},
		{name: "v2 singleProcessOOMKill", v2: true,
			mutate: func(c *config.Config) { c.Kubelet.SingleProcessOOMKill = ptr.To(true) },
			want:   kuberuntime.MemorySettings{CgroupV2: true}},
		{name: "v2 LimitedSwap", v2: true, controller: true,
			mutate: func(c *config.Config) { c.Kubelet.MemorySwap.SwapBehavior = kuberuntime.LimitedSwap },
			want:   kuberuntime.MemorySettings{CgroupV2: true, OOMGroup: true, SwapController: true, SwapBehavior: kuberuntime.LimitedSwap}},
		{name: "NodeSwap off: no swap whatever swapBehavior", v2: true, controller: true,
			mutate: func(c *config.Config) {
				c.NodeSwap = false
				c.Kubelet.MemorySwap.SwapBehavior = kuberuntime.LimitedSwap
			},
			want: kuberuntime.MemorySettings{CgroupV2: true, OOMGroup: true, SwapController: true, SwapBehavior: kuberuntime.NoSwap}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			memoryHost(t, tt.v2, tt.controller)
			cfg, _, _ := testConfig(t)
			cfg.NodeSwap = true
			if tt.mutate != nil {
				tt.mutate(cfg)
			}
			got, err := memorySettings(cfg, &machine.Machine{MemoryBytes: 8000000 * 1024, SwapBytes: 2000000 * 1024})
			if err != nil {
				t.Fatal(err)
			}
			tt.want.MemoryCapacity, tt.want.SwapCapacity = 8000000*1024, 2000000*1024
			if got != tt.want {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestSingleProcessOOMKillFalseRefusedOnCgroupV1(t *testing.T) {
	memoryHost(t, false, true)
	cfg, _, _ := testConfig(t)
	cfg.Kubelet.SingleProcessOOMKill = ptr.To(false)
	err := prepareHost(cfg)
	want := "invalid configuration: singleProcessOOMKill must not be explicitly set to false when using cgroup v1"
	if err == nil || err.Error() != want {
		t.Fatalf("got %v, want %q", err, want)
	}
}
