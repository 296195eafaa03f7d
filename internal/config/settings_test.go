package config

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nodelet/nodelet/internal/cm/cmpolicy"
)

// Complete's Settings carry the defaults of the pointer fields and let flags override them.
func TestSettingsCarryDefaultsAndFlags(t *testing.T) {
	s := mustComplete(t).Settings
	want := Settings{
		RegisterNode: true, EnableServer: true, EnableDebuggingHandlers: true, EnableProfilingHandler: true,
		EnableDebugFlagsHandler: true, EnableSystemLogHandler: true, HealthzPort: 10248, WebhookAuthn: true,
		ImageServiceEndpoint: DefaultContainerRuntimeEndpoint, SerializeImagePulls: true, RegistryPullQPS: 5,
		ImageGCHighPercent: 85, ImageGCLowPercent: 80,
		ResolverConfig: DefaultResolvConf, CPUCFSQuota: true, CgroupsPerQOS: true, PodPidsLimit: -1,
		LocalStorageCapacityIsolation: true, ContainerLogMaxFiles: 5, ContainerLogMonitorInterval: 10 * time.Second,
		FailSwapOn: true, OOMScoreAdj: -999,
		NodeStatusMaxImages: 50, EnableControllerAttachDetach: true, KubeAPIQPS: 50, EventRecordQPS: 50,
		UserNamespacesSupport: true, CPUManagerOptionGates: cmpolicy.DefaultCPUOptionGates, DisableCPUQuotaWithExclusiveCPUs: true,
		ContainerCheckpoint: true, SystemdWatchdog: true, ReloadServingCertFile: true, NodeSwap: true, CgroupDriverFromCRI: true,
	}
	if s != want {
		t.Errorf("default settings:\n got %+v\nwant %+v", s, want)
	}
	file := filepath.Join(t.TempDir(), "kubelet.yaml")
	yaml := "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\ncontainerLogMonitorInterval: 30s\n"
	if err := os.WriteFile(file, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	if s := mustComplete(t, "--config="+file).Settings; s.ContainerLogMonitorInterval != 30*time.Second {
		t.Errorf("containerLogMonitorInterval from the file: %v, want 30s", s.ContainerLogMonitorInterval)
	}
	s = mustComplete(t, "--healthz-port=0", "--fail-swap-on=false", "--cgroups-per-qos=false",
		"--enforce-node-allocatable=none", "--container-runtime-endpoint=unix:///run/a.sock",
		"--serialize-image-pulls=false", "--max-parallel-image-pulls=3").Settings
	if s.HealthzPort != 0 || s.FailSwapOn || s.CgroupsPerQOS {
		t.Errorf("flags not applied: %+v", s)
	}
	if s.ImageServiceEndpoint != "unix:///run/a.sock" {
		t.Errorf("imageServiceEndpoint = %q, want the runtime's endpoint", s.ImageServiceEndpoint)
	}
	if s.MaxParallelImagePulls != 3 || s.SerializeImagePulls {
		t.Errorf("parallel pulls: max %d, serialized %v; want 3, false", s.MaxParallelImagePulls, s.SerializeImagePulls)
	}
}

// The pod-resources API's Get method follows its upstream gate, off by default.
func TestPodResourcesGetFollowsItsGate(t *testing.T) {
	if mustComplete(t).Settings.PodResourcesGet {
		t.Error("KubeletPodResourcesGet is on by default; upstream has it off")
	}
	file := filepath.Join(t.TempDir(), "kubelet.yaml")
	yaml := "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nfeatureGates:\n  KubeletPodResourcesGet: true\n"
	if err := os.WriteFile(file, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	if !mustComplete(t, "--config="+file).Settings.PodResourcesGet {
		t.Error("featureGates KubeletPodResourcesGet: true did not turn Get on")
	}
}

// DRA follows DynamicResourceAllocation (beta, off by default in 1.33), and the pod-resources
// API's dynamic resources KubeletPodResourcesDynamicResources (alpha, off).
func TestDynamicResourcesFollowTheirGates(t *testing.T) {
	s := mustComplete(t).Settings
	if s.DynamicResources || s.PodResourcesDynamicResources {
		t.Error("the DRA gates are on by default; upstream has them off")
	}
	file := filepath.Join(t.TempDir(), "kubelet.yaml")
	yaml := "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nfeatureGates:\n  DynamicResourceAllocation: true\n  KubeletPodResourcesDynamicResources: true\n"
	if err := os.WriteFile(file, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	s = mustComplete(t, "--config="+file).Settings
	if !s.DynamicResources || !s.PodResourcesDynamicResources {
		t.Errorf("featureGates did not turn DRA on: %v %v", s.DynamicResources, s.PodResourcesDynamicResources)
	}
}

// The gates behind the checkpoint API, the systemd watchdog and the serving certificate
// reload are on by default, as upstream 1.33, and can be turned off.
func TestAPIOpsGatesCanBeTurnedOff(t *testing.T) {
	file := filepath.Join(t.TempDir(), "kubelet.yaml")
	yaml := "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nfeatureGates:\n  ContainerCheckpoint: false\n  SystemdWatchdog: false\n  ReloadKubeletServerCertificateFile: false\n"
	if err := os.WriteFile(file, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	s := mustComplete(t, "--config", file).Settings
	if s.ContainerCheckpoint || s.SystemdWatchdog || s.ReloadServingCertFile {
		t.Errorf("gates set false still on: %+v", s)
	}
}
