package podhooks

import (
	"context"
	"errors"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// step is a hook of every kind that notes its name, and fails when err is set.
type step struct {
	name  string
	err   error
	trace *[]string
}

func (s step) ApplySandbox(context.Context, *v1.Pod, *runtimeapi.PodSandboxConfig) error {
	*s.trace = append(*s.trace, s.name)
	return s.err
}

func (s step) ApplyContainer(context.Context, *v1.Pod, *v1.Container, *runtimeapi.ContainerConfig) error {
	*s.trace = append(*s.trace, s.name)
	return s.err
}

func (s step) ApplyResources(*v1.Pod, *v1.Container, *runtimeapi.LinuxContainerResources) {
	*s.trace = append(*s.trace, s.name)
}

// Each kind runs in its list's order; a failing hook stops the ones after it.
func TestHooksRunInOrderAndStopAtAnError(t *testing.T) {
	var trace []string
	a, b := step{name: "a", trace: &trace}, step{name: "b", trace: &trace}
	failing := step{name: "x", err: errors.New("no"), trace: &trace}
	ok := Hooks{Sandbox: []Sandbox{a, b}, Container: []Container{b, a}, Resources: []Resources{a, b}}
	pod, c := &v1.Pod{}, &v1.Container{}
	if err := ok.ApplySandbox(context.Background(), pod, &runtimeapi.PodSandboxConfig{}); err != nil {
		t.Fatal(err)
	}
	if err := ok.ApplyContainer(context.Background(), pod, c, &runtimeapi.ContainerConfig{}); err != nil {
		t.Fatal(err)
	}
	ok.ApplyResources(pod, c, &runtimeapi.LinuxContainerResources{})
	if got := strings.Join(trace, ""); got != "abbaab" {
		t.Errorf("order %q, want abbaab", got)
	}
	trace = nil
	bad := Hooks{Sandbox: []Sandbox{a, failing, b}, Container: []Container{failing, a}}
	if err := bad.ApplySandbox(context.Background(), pod, &runtimeapi.PodSandboxConfig{}); err == nil {
		t.Error("a failing sandbox hook: no error")
	}
	if err := bad.ApplyContainer(context.Background(), pod, c, &runtimeapi.ContainerConfig{}); err == nil {
		t.Error("a failing container hook: no error")
	}
	if got := strings.Join(trace, ""); got != "axx" {
		t.Errorf("ran %q, want axx (nothing after a failure)", got)
	}
}

func TestLinuxResourcesMakesWhatIsMissing(t *testing.T) {
	cfg := &runtimeapi.ContainerConfig{}
	LinuxResources(cfg).CpusetCpus = "1"
	if cfg.GetLinux().GetResources().GetCpusetCpus() != "1" {
		t.Errorf("config %v", cfg)
	}
	kept := &runtimeapi.LinuxContainerResources{CpuShares: 2}
	cfg = &runtimeapi.ContainerConfig{Linux: &runtimeapi.LinuxContainerConfig{Resources: kept}}
	if LinuxResources(cfg) != kept {
		t.Error("existing resources replaced")
	}
}
