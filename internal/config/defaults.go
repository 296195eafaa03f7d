package config

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	logsapi "k8s.io/component-base/logs/api/v1"
	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"
	"k8s.io/utils/ptr"
)

// Defaults that other packages may want to refer to by name.
const (
	DefaultRootDir                  = "/var/lib/kubelet"
	DefaultCertDir                  = "/var/lib/kubelet/pki"
	DefaultNodeUIAddress            = "127.0.0.1"
	DefaultContainerRuntimeEndpoint = "unix:///run/containerd/containerd.sock"
	DefaultPodLogsDir               = "/var/log/pods"
	DefaultResolvConf               = "/etc/resolv.conf"
	DefaultVolumePluginDir          = "/usr/libexec/kubernetes/kubelet-plugins/volume/exec/"
)

// DefaultEvictionHard returns a fresh copy of the hard eviction thresholds used
// when the configuration names none.
func DefaultEvictionHard() map[string]string {
	return map[string]string{
		"memory.available":   "100Mi",
		"nodefs.available":   "10%",
		"nodefs.inodesFree":  "5%",
		"imagefs.available":  "15%",
		"imagefs.inodesFree": "5%",
	}
}

// SetDefaults fills every unset field of kc with the value the upstream kubelet
// uses for kubelet.config.k8s.io/v1beta1. Fields already set are left alone,
// so calling it twice is harmless.
func SetDefaults(kc *kubeletconfigv1beta1.KubeletConfiguration) {
	kc.APIVersion = kubeletconfigv1beta1.SchemeGroupVersion.String()
	kc.Kind = "KubeletConfiguration"

	setServerDefaults(kc)
	setAuthDefaults(kc)
	setPodSourceDefaults(kc)
	setNodeStatusDefaults(kc)
	setImageDefaults(kc)
	setResourceDefaults(kc)
	setEvictionDefaults(kc)
	setRuntimeDefaults(kc)
	setMiscDefaults(kc)
}

// defaultDuration sets d when it is zero.
func defaultDuration(d *metav1.Duration, v time.Duration) {
	if d.Duration == 0 {
		d.Duration = v
	}
}

// defaultString sets s when it is empty.
func defaultString(s *string, v string) {
	if *s == "" {
		*s = v
	}
}

// defaultInt32 sets n when it is zero.
func defaultInt32(n *int32, v int32) {
	if *n == 0 {
		*n = v
	}
}

// defaultPtr sets *p to a pointer to v when it is nil.
func defaultPtr[T any](p **T, v T) {
	if *p == nil {
		*p = ptr.To(v)
	}
}

func setServerDefaults(kc *kubeletconfigv1beta1.KubeletConfiguration) {
	defaultPtr(&kc.EnableServer, true)
	defaultString(&kc.Address, "0.0.0.0")
	defaultInt32(&kc.Port, 10250)
	// readOnlyPort stays 0: the unauthenticated port is off unless asked for.
	defaultPtr(&kc.HealthzPort, 10248)
	defaultString(&kc.HealthzBindAddress, "127.0.0.1")
	defaultPtr(&kc.EnableDebuggingHandlers, true)
	defaultPtr(&kc.EnableProfilingHandler, true)
	defaultPtr(&kc.EnableDebugFlagsHandler, true)
	defaultPtr(&kc.EnableSystemLogHandler, true)
	defaultPtr(&kc.EnableSystemLogQuery, false)
	defaultDuration(&kc.StreamingConnectionIdleTimeout, 4*time.Hour)
}

func setAuthDefaults(kc *kubeletconfigv1beta1.KubeletConfiguration) {
	authn := &kc.Authentication
	defaultPtr(&authn.Anonymous.Enabled, false)
	defaultPtr(&authn.Webhook.Enabled, true)
	defaultDuration(&authn.Webhook.CacheTTL, 2*time.Minute)

	authz := &kc.Authorization
	if authz.Mode == "" {
		authz.Mode = kubeletconfigv1beta1.KubeletAuthorizationModeWebhook
	}
	defaultDuration(&authz.Webhook.CacheAuthorizedTTL, 5*time.Minute)
	defaultDuration(&authz.Webhook.CacheUnauthorizedTTL, 30*time.Second)
}

func setPodSourceDefaults(kc *kubeletconfigv1beta1.KubeletConfiguration) {
	defaultDuration(&kc.SyncFrequency, time.Minute)
	defaultDuration(&kc.FileCheckFrequency, 20*time.Second)
	defaultDuration(&kc.HTTPCheckFrequency, 20*time.Second)
	defaultInt32(&kc.MaxPods, 110)
	defaultPtr(&kc.PodPidsLimit, -1)
	defaultString(&kc.PodLogsDir, DefaultPodLogsDir)
	defaultPtr(&kc.ResolverConfig, DefaultResolvConf)
	defaultPtr(&kc.RegisterNode, true)
	if kc.ConfigMapAndSecretChangeDetectionStrategy == "" {
		kc.ConfigMapAndSecretChangeDetectionStrategy = kubeletconfigv1beta1.WatchChangeDetectionStrategy
	}
}

func setNodeStatusDefaults(kc *kubeletconfigv1beta1.KubeletConfiguration) {
	// An explicitly chosen update frequency also becomes the report frequency,
	// so old configurations that only knew the one knob keep reporting as often.
	if kc.NodeStatusReportFrequency.Duration == 0 && kc.NodeStatusUpdateFrequency.Duration != 0 {
		kc.NodeStatusReportFrequency = kc.NodeStatusUpdateFrequency
	}
	defaultDuration(&kc.NodeStatusUpdateFrequency, 10*time.Second)
	defaultDuration(&kc.NodeStatusReportFrequency, 5*time.Minute)
	defaultInt32(&kc.NodeLeaseDurationSeconds, 40)
	defaultPtr(&kc.NodeStatusMaxImages, 50)
	defaultString(&kc.ContentType, "application/vnd.kubernetes.protobuf")
	defaultPtr(&kc.KubeAPIQPS, 50)
	defaultInt32(&kc.KubeAPIBurst, 100)
	defaultPtr(&kc.EventRecordQPS, 50)
	defaultInt32(&kc.EventBurst, 100)
}

func setImageDefaults(kc *kubeletconfigv1beta1.KubeletConfiguration) {
	defaultDuration(&kc.ImageMinimumGCAge, 2*time.Minute)
	// imageMaximumGCAge stays 0: age-based collection is off by default.
	defaultPtr(&kc.ImageGCHighThresholdPercent, 85)
	defaultPtr(&kc.ImageGCLowThresholdPercent, 80)
	// Parallel pulls imply the pulls are not serialized.
	parallel := kc.MaxParallelImagePulls != nil && *kc.MaxParallelImagePulls > 1
	defaultPtr(&kc.SerializeImagePulls, !parallel)
	defaultPtr(&kc.RegistryPullQPS, 5)
	defaultInt32(&kc.RegistryBurst, 10)
}

func setResourceDefaults(kc *kubeletconfigv1beta1.KubeletConfiguration) {
	defaultString(&kc.CgroupDriver, "cgroupfs")
	defaultString(&kc.CgroupRoot, "/")
	defaultPtr(&kc.CgroupsPerQOS, true)
	if kc.EnforceNodeAllocatable == nil {
		kc.EnforceNodeAllocatable = []string{"pods"}
	}
	defaultString(&kc.CPUManagerPolicy, "none")
	defaultDuration(&kc.CPUManagerReconcilePeriod, 10*time.Second)
	defaultString(&kc.MemoryManagerPolicy, kubeletconfigv1beta1.NoneMemoryManagerPolicy)
	defaultString(&kc.TopologyManagerPolicy, kubeletconfigv1beta1.NoneTopologyManagerPolicy)
	defaultString(&kc.TopologyManagerScope, kubeletconfigv1beta1.ContainerTopologyManagerScope)
	defaultPtr(&kc.CPUCFSQuota, true)
	defaultPtr(&kc.CPUCFSQuotaPeriod, metav1.Duration{Duration: 100 * time.Millisecond})
	defaultPtr(&kc.OOMScoreAdj, -999)
	defaultInt64(&kc.MaxOpenFiles, 1000000)
	defaultPtr(&kc.MemoryThrottlingFactor, 0.9)
	defaultPtr(&kc.LocalStorageCapacityIsolation, true)
	defaultPtr(&kc.FailSwapOn, true)
	defaultPtr(&kc.FailCgroupV1, false)
	defaultPtr(&kc.SeccompDefault, false)
	defaultDuration(&kc.VolumeStatsAggPeriod, time.Minute)
	defaultString(&kc.VolumePluginDir, DefaultVolumePluginDir)
	defaultPtr(&kc.EnableControllerAttachDetach, true)
}

func setEvictionDefaults(kc *kubeletconfigv1beta1.KubeletConfiguration) {
	defaultPtr(&kc.MergeDefaultEvictionSettings, false)
	switch {
	case kc.EvictionHard == nil:
		kc.EvictionHard = DefaultEvictionHard()
	case *kc.MergeDefaultEvictionSettings:
		// A partial map only overrides the signals it names.
		for signal, threshold := range DefaultEvictionHard() {
			if _, set := kc.EvictionHard[signal]; !set {
				kc.EvictionHard[signal] = threshold
			}
		}
	}
	defaultDuration(&kc.EvictionPressureTransitionPeriod, 5*time.Minute)
}

func setRuntimeDefaults(kc *kubeletconfigv1beta1.KubeletConfiguration) {
	defaultString(&kc.ContainerRuntimeEndpoint, DefaultContainerRuntimeEndpoint)
	defaultDuration(&kc.RuntimeRequestTimeout, 2*time.Minute)
	defaultString(&kc.HairpinMode, kubeletconfigv1beta1.PromiscuousBridge)
	defaultString(&kc.ContainerLogMaxSize, "10Mi")
	defaultPtr(&kc.ContainerLogMaxFiles, 5)
	defaultPtr(&kc.ContainerLogMaxWorkers, 1)
	defaultPtr(&kc.ContainerLogMonitorInterval, metav1.Duration{Duration: 10 * time.Second})
}

func setMiscDefaults(kc *kubeletconfigv1beta1.KubeletConfiguration) {
	defaultPtr(&kc.MakeIPTablesUtilChains, true)
	defaultPtr(&kc.IPTablesMasqueradeBit, 14)
	defaultPtr(&kc.IPTablesDropBit, 15)
	logsapi.SetRecommendedLoggingConfiguration(&kc.Logging)
}

// defaultInt64 sets n when it is zero.
func defaultInt64(n *int64, v int64) {
	if *n == 0 {
		*n = v
	}
}
