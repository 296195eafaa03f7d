package config

import (
	"maps"
	"reflect"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"
	"k8s.io/utils/ptr"
)

func defaulted() *kubeletconfigv1beta1.KubeletConfiguration {
	kc := &kubeletconfigv1beta1.KubeletConfiguration{}
	SetDefaults(kc)
	return kc
}

func TestSetDefaultsFillsEmptyConfig(t *testing.T) {
	kc := defaulted()
	checks := []struct {
		field     string
		got, want any
	}{
		{"apiVersion", kc.APIVersion, "kubelet.config.k8s.io/v1beta1"},
		{"kind", kc.Kind, "KubeletConfiguration"},
		{"enableServer", *kc.EnableServer, true},
		{"syncFrequency", kc.SyncFrequency.Duration, time.Minute},
		{"fileCheckFrequency", kc.FileCheckFrequency.Duration, 20 * time.Second},
		{"httpCheckFrequency", kc.HTTPCheckFrequency.Duration, 20 * time.Second},
		{"address", kc.Address, "0.0.0.0"},
		{"port", kc.Port, int32(10250)},
		{"readOnlyPort", kc.ReadOnlyPort, int32(0)},
		{"healthzPort", *kc.HealthzPort, int32(10248)},
		{"healthzBindAddress", kc.HealthzBindAddress, "127.0.0.1"},
		{"authentication.anonymous.enabled", *kc.Authentication.Anonymous.Enabled, false},
		{"authentication.webhook.enabled", *kc.Authentication.Webhook.Enabled, true},
		{"authentication.webhook.cacheTTL", kc.Authentication.Webhook.CacheTTL.Duration, 2 * time.Minute},
		{"authorization.mode", kc.Authorization.Mode, kubeletconfigv1beta1.KubeletAuthorizationModeWebhook},
		{"authorization.webhook.cacheAuthorizedTTL", kc.Authorization.Webhook.CacheAuthorizedTTL.Duration, 5 * time.Minute},
		{"authorization.webhook.cacheUnauthorizedTTL", kc.Authorization.Webhook.CacheUnauthorizedTTL.Duration, 30 * time.Second},
		{"registryPullQPS", *kc.RegistryPullQPS, int32(5)},
		{"registryBurst", kc.RegistryBurst, int32(10)},
		{"eventRecordQPS", *kc.EventRecordQPS, int32(50)},
		{"eventBurst", kc.EventBurst, int32(100)},
		{"enableDebuggingHandlers", *kc.EnableDebuggingHandlers, true},
		{"oomScoreAdj", *kc.OOMScoreAdj, int32(-999)},
		{"clusterDomain", kc.ClusterDomain, ""},
		{"streamingConnectionIdleTimeout", kc.StreamingConnectionIdleTimeout.Duration, 4 * time.Hour},
		{"nodeStatusUpdateFrequency", kc.NodeStatusUpdateFrequency.Duration, 10 * time.Second},
		{"nodeStatusReportFrequency", kc.NodeStatusReportFrequency.Duration, 5 * time.Minute},
		{"nodeLeaseDurationSeconds", kc.NodeLeaseDurationSeconds, int32(40)},
		{"imageMinimumGCAge", kc.ImageMinimumGCAge.Duration, 2 * time.Minute},
		{"imageMaximumGCAge", kc.ImageMaximumGCAge.Duration, time.Duration(0)},
		{"imageGCHighThresholdPercent", *kc.ImageGCHighThresholdPercent, int32(85)},
		{"imageGCLowThresholdPercent", *kc.ImageGCLowThresholdPercent, int32(80)},
		{"volumeStatsAggPeriod", kc.VolumeStatsAggPeriod.Duration, time.Minute},
		{"cgroupRoot", kc.CgroupRoot, "/"},
		{"cgroupsPerQOS", *kc.CgroupsPerQOS, true},
		{"cgroupDriver", kc.CgroupDriver, "cgroupfs"},
		{"cpuManagerPolicy", kc.CPUManagerPolicy, "none"},
		{"memoryManagerPolicy", kc.MemoryManagerPolicy, "None"},
		{"topologyManagerPolicy", kc.TopologyManagerPolicy, "none"},
		{"topologyManagerScope", kc.TopologyManagerScope, "container"},
		{"runtimeRequestTimeout", kc.RuntimeRequestTimeout.Duration, 2 * time.Minute},
		{"hairpinMode", kc.HairpinMode, "promiscuous-bridge"},
		{"maxPods", kc.MaxPods, int32(110)},
		{"podPidsLimit", *kc.PodPidsLimit, int64(-1)},
		{"resolvConf", *kc.ResolverConfig, "/etc/resolv.conf"},
		{"cpuCFSQuota", *kc.CPUCFSQuota, true},
		{"cpuCFSQuotaPeriod", kc.CPUCFSQuotaPeriod.Duration, 100 * time.Millisecond},
		{"nodeStatusMaxImages", *kc.NodeStatusMaxImages, int32(50)},
		{"maxOpenFiles", kc.MaxOpenFiles, int64(1000000)},
		{"contentType", kc.ContentType, "application/vnd.kubernetes.protobuf"},
		{"kubeAPIQPS", *kc.KubeAPIQPS, int32(50)},
		{"kubeAPIBurst", kc.KubeAPIBurst, int32(100)},
		{"serializeImagePulls", *kc.SerializeImagePulls, true},
		{"evictionHard", kc.EvictionHard, DefaultEvictionHard()},
		{"evictionPressureTransitionPeriod", kc.EvictionPressureTransitionPeriod.Duration, 5 * time.Minute},
		{"enableControllerAttachDetach", *kc.EnableControllerAttachDetach, true},
		{"makeIPTablesUtilChains", *kc.MakeIPTablesUtilChains, true},
		{"iptablesMasqueradeBit", *kc.IPTablesMasqueradeBit, int32(14)},
		{"iptablesDropBit", *kc.IPTablesDropBit, int32(15)},
		{"failSwapOn", *kc.FailSwapOn, true},
		{"containerLogMaxSize", kc.ContainerLogMaxSize, "10Mi"},
		{"containerLogMaxFiles", *kc.ContainerLogMaxFiles, int32(5)},
		{"containerLogMaxWorkers", *kc.ContainerLogMaxWorkers, int32(1)},
		{"containerLogMonitorInterval", kc.ContainerLogMonitorInterval.Duration, 10 * time.Second},
		{"configMapAndSecretChangeDetectionStrategy", kc.ConfigMapAndSecretChangeDetectionStrategy, kubeletconfigv1beta1.WatchChangeDetectionStrategy},
		{"enforceNodeAllocatable", kc.EnforceNodeAllocatable, []string{"pods"}},
		{"volumePluginDir", kc.VolumePluginDir, "/usr/libexec/kubernetes/kubelet-plugins/volume/exec/"},
		{"logging.format", kc.Logging.Format, "text"},
		{"enableSystemLogHandler", *kc.EnableSystemLogHandler, true},
		{"shutdownGracePeriod", kc.ShutdownGracePeriod.Duration, time.Duration(0)},
		{"enableProfilingHandler", *kc.EnableProfilingHandler, true},
		{"enableDebugFlagsHandler", *kc.EnableDebugFlagsHandler, true},
		{"seccompDefault", *kc.SeccompDefault, false},
		{"memoryThrottlingFactor", *kc.MemoryThrottlingFactor, 0.9},
		{"registerNode", *kc.RegisterNode, true},
		{"localStorageCapacityIsolation", *kc.LocalStorageCapacityIsolation, true},
		{"containerRuntimeEndpoint", kc.ContainerRuntimeEndpoint, "unix:///run/containerd/containerd.sock"},
		{"failCgroupV1", *kc.FailCgroupV1, false},
		{"staticPodPath", kc.StaticPodPath, ""},
		{"podLogsDir", kc.PodLogsDir, "/var/log/pods"},
	}
	for _, c := range checks {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s = %#v, want %#v", c.field, c.got, c.want)
		}
	}
}

func TestSetDefaultsKeepsSetValues(t *testing.T) {
	kc := &kubeletconfigv1beta1.KubeletConfiguration{
		MaxPods:       7,
		HealthzPort:   ptr.To[int32](0),
		FailSwapOn:    ptr.To(false),
		CgroupDriver:  "systemd",
		EvictionHard:  map[string]string{"memory.available": "1Gi"},
		SyncFrequency: metav1.Duration{Duration: 3 * time.Second},
		ReadOnlyPort:  10255,
	}
	SetDefaults(kc)
	if kc.MaxPods != 7 || *kc.HealthzPort != 0 || *kc.FailSwapOn || kc.CgroupDriver != "systemd" ||
		kc.SyncFrequency.Duration != 3*time.Second || kc.ReadOnlyPort != 10255 {
		t.Errorf("SetDefaults overwrote set values: %+v", kc)
	}
	if want := map[string]string{"memory.available": "1Gi"}; !maps.Equal(kc.EvictionHard, want) {
		t.Errorf("evictionHard = %v, want the configured map untouched", kc.EvictionHard)
	}
}

func TestSetDefaultsIsIdempotent(t *testing.T) {
	once := defaulted()
	twice := defaulted()
	SetDefaults(twice)
	if !reflect.DeepEqual(once, twice) {
		t.Error("defaulting twice changed the configuration")
	}
}

func TestReportFrequencyFollowsExplicitUpdateFrequency(t *testing.T) {
	kc := &kubeletconfigv1beta1.KubeletConfiguration{
		NodeStatusUpdateFrequency: metav1.Duration{Duration: 4 * time.Second},
	}
	SetDefaults(kc)
	if got := kc.NodeStatusReportFrequency.Duration; got != 4*time.Second {
		t.Errorf("nodeStatusReportFrequency = %s, want the explicit update frequency 4s", got)
	}
}

func TestMergeDefaultEvictionSettings(t *testing.T) {
	kc := &kubeletconfigv1beta1.KubeletConfiguration{
		EvictionHard:                 map[string]string{"memory.available": "1Gi"},
		MergeDefaultEvictionSettings: ptr.To(true),
	}
	SetDefaults(kc)
	want := DefaultEvictionHard()
	want["memory.available"] = "1Gi"
	if !maps.Equal(kc.EvictionHard, want) {
		t.Errorf("evictionHard = %v, want %v", kc.EvictionHard, want)
	}
}

func TestParallelPullsTurnOffSerializedPulls(t *testing.T) {
	kc := &kubeletconfigv1beta1.KubeletConfiguration{MaxParallelImagePulls: ptr.To[int32](3)}
	SetDefaults(kc)
	if *kc.SerializeImagePulls {
		t.Error("serializeImagePulls defaulted to true although maxParallelImagePulls is 3")
	}
	if err := Validate(kc); err != nil {
		t.Errorf("Validate: %v", err)
	}
}

func TestDefaultsAreValid(t *testing.T) {
	if err := Validate(defaulted()); err != nil {
		t.Errorf("defaulted configuration does not validate: %v", err)
	}
}
