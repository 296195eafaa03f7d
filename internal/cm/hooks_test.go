package cm

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// The sandbox hook makes the pod's cgroup and names it as the sandbox's cgroup parent.
func TestSandboxHookMakesThePodCgroup(t *testing.T) {
	f := newFakeV1(t)
	m := &ContainerManager{pods: startManager(t, f, Options{})}
	cfg := &runtimeapi.PodSandboxConfig{}
	if err := m.ApplySandbox(context.Background(), burstable("b1", "100m"), cfg); err != nil {
		t.Fatal(err)
	}
	if want := "/kubepods/burstable/podb1"; cfg.GetLinux().GetCgroupParent() != want {
		t.Errorf("cgroup parent %q, want %q", cfg.GetLinux().GetCgroupParent(), want)
	}
	if _, err := os.Stat(filepath.Join(f.root, "memory", cfg.Linux.CgroupParent)); err != nil {
		t.Errorf("pod cgroup not made: %v", err)
	}
}

// A pod cgroup that cannot be made fails the hook, saying so; without pod cgroups the hook
// leaves the placement to the runtime.
func TestSandboxHookFailureAndNoPodCgroups(t *testing.T) {
	f := newFakeV1(t)
	m := &ContainerManager{pods: startManager(t, f, Options{})}
	kubepods := filepath.Join(f.root, "memory", "kubepods")
	if err := os.RemoveAll(kubepods); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(kubepods, nil, 0o644); err != nil { // not a directory any more
		t.Fatal(err)
	}
	err := m.ApplySandbox(context.Background(), guaranteed("g1"), &runtimeapi.PodSandboxConfig{})
	if err == nil || !strings.HasPrefix(err.Error(), "pod cgroup: ") {
		t.Errorf("err %v, want a pod cgroup error", err)
	}
	cfg := &runtimeapi.PodSandboxConfig{}
	if err := (&ContainerManager{}).ApplySandbox(context.Background(), guaranteed("g2"), cfg); err != nil || cfg.Linux != nil {
		t.Errorf("without pod cgroups: err %v, linux %v", err, cfg.Linux)
	}
}
