package config

import (
	"time"

	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"

	"github.com/nodelet/nodelet/internal/cm/cmpolicy"
)

// Settings are the KubeletConfiguration's optional (pointer) fields and derived values
// nodelet reads, as plain values: SetDefaults has set each of them once, Complete copies them
// here, and nothing else defaults them again.
type Settings struct {
	RegisterNode bool

	EnableServer            bool
	EnableDebuggingHandlers bool
	EnableProfilingHandler  bool
	EnableDebugFlagsHandler bool
	EnableSystemLogHandler  bool
	HealthzPort             int32 // 0: no healthz listener
	AnonymousAuth           bool  // authentication.anonymous.enabled
	WebhookAuthn            bool  // authentication.webhook.enabled

	// ImageServiceEndpoint is imageServiceEndpoint, else the container runtime's endpoint.
	ImageServiceEndpoint  string
	SerializeImagePulls   bool
	MaxParallelImagePulls int32 // 0: no limit
	RegistryPullQPS       int32
	ImageGCHighPercent    int32
	ImageGCLowPercent     int32

	ResolverConfig                string
	SeccompDefault                bool
	CPUCFSQuota                   bool
	CgroupsPerQOS                 bool
	PodPidsLimit                  int64
	LocalStorageCapacityIsolation bool
	ContainerLogMaxFiles          int32
	ContainerLogMonitorInterval   time.Duration
	FailSwapOn                    bool
	FailCgroupV1                  bool
	OOMScoreAdj                   int32

	NodeStatusMaxImages          int32
	EnableControllerAttachDetach bool
	KubeAPIQPS                   int32
	// UserNamespacesSupport is that feature gate (on unless featureGates turns it off).
	UserNamespacesSupport bool
	// PodResourcesGet is the KubeletPodResourcesGet feature gate (off unless featureGates turns
	// it on): the pod-resources API's Get method.
	PodResourcesGet bool
	// DynamicResources is the DynamicResourceAllocation feature gate (beta, off unless
	// featureGates turns it on): DRA drivers register and pods' ResourceClaims are prepared;
	// off, a pod with claims is refused.
	DynamicResources bool
	// PodResourcesDynamicResources is the KubeletPodResourcesDynamicResources feature gate
	// (alpha, off): the pod-resources API lists the containers' prepared claims.
	PodResourcesDynamicResources bool
	// CPUManagerOptionGates are CPUManagerPolicyAlphaOptions (off) and
	// CPUManagerPolicyBetaOptions (on): which stages of cpuManagerPolicyOptions may be used.
	CPUManagerOptionGates cmpolicy.CPUOptionGates
	// DisableCPUQuotaWithExclusiveCPUs is that feature gate (on unless featureGates turns it
	// off): containers given exclusive CPUs, and their pods' cgroups, get no CFS quota.
	DisableCPUQuotaWithExclusiveCPUs bool
	// ResizeExclusiveCPUs is the InPlacePodVerticalScalingExclusiveCPUs feature gate (off
	// unless featureGates turns it on): Guaranteed pods may be resized in place beside the
	// static CPU and memory manager policies.
	ResizeExclusiveCPUs bool
	// ContainerCheckpoint is that feature gate (on unless featureGates turns it off): the
	// kubelet API's POST /checkpoint.
	ContainerCheckpoint bool
	// SystemdWatchdog is that feature gate (on unless featureGates turns it off): pings to
	// systemd's watchdog when the unit sets WatchdogSec.
	SystemdWatchdog bool
	// ReloadServingCertFile is the ReloadKubeletServerCertificateFile feature gate (on unless
	// featureGates turns it off): the serving pair's files are read again when they change.
	ReloadServingCertFile bool
	// NodeSwap is that feature gate (on unless featureGates turns it off): LimitedSwap may
	// let containers swap.
	NodeSwap bool
	// CgroupDriverFromCRI is the KubeletCgroupDriverFromCRI feature gate (on unless
	// featureGates turns it off): the runtime's RuntimeConfig names the cgroup driver.
	CgroupDriverFromCRI bool
	// PullRuntimeHandler is the RuntimeClassInImageCriApi feature gate (off unless
	// featureGates turns it on): image pulls name the pod's runtime handler.
	PullRuntimeHandler bool
	// StopSignals is the ContainerStopSignals feature gate (off unless featureGates turns it
	// on): containers' lifecycle.stopSignal goes to the runtime and their status reports it.
	StopSignals bool
	// ImageVolumes is the ImageVolume feature gate (off unless featureGates turns it on):
	// image volumes are pulled and mounted through CRI; off, a pod's image volume has no
	// plugin and the pod waits for it, as upstream's.
	ImageVolumes   bool
	EventRecordQPS int32
}

// settingsOf reads kc's settings. kc has been through SetDefaults (and the flags only set its
// pointers, never clear them), so every pointer read here is set.
func settingsOf(kc *kubeletconfigv1beta1.KubeletConfiguration) Settings {
	s := Settings{
		RegisterNode:            *kc.RegisterNode,
		EnableServer:            *kc.EnableServer,
		EnableDebuggingHandlers: *kc.EnableDebuggingHandlers,
		EnableProfilingHandler:  *kc.EnableProfilingHandler,
		EnableDebugFlagsHandler: *kc.EnableDebugFlagsHandler,
		EnableSystemLogHandler:  *kc.EnableSystemLogHandler,
		HealthzPort:             *kc.HealthzPort,
		AnonymousAuth:           *kc.Authentication.Anonymous.Enabled,
		WebhookAuthn:            *kc.Authentication.Webhook.Enabled,

		ImageServiceEndpoint: kc.ImageServiceEndpoint,
		SerializeImagePulls:  *kc.SerializeImagePulls,
		RegistryPullQPS:      *kc.RegistryPullQPS,
		ImageGCHighPercent:   *kc.ImageGCHighThresholdPercent,
		ImageGCLowPercent:    *kc.ImageGCLowThresholdPercent,

		ResolverConfig:                *kc.ResolverConfig,
		SeccompDefault:                *kc.SeccompDefault,
		CPUCFSQuota:                   *kc.CPUCFSQuota,
		CgroupsPerQOS:                 *kc.CgroupsPerQOS,
		PodPidsLimit:                  *kc.PodPidsLimit,
		LocalStorageCapacityIsolation: *kc.LocalStorageCapacityIsolation,
		ContainerLogMaxFiles:          *kc.ContainerLogMaxFiles,
		ContainerLogMonitorInterval:   kc.ContainerLogMonitorInterval.Duration,
		FailSwapOn:                    *kc.FailSwapOn,
		FailCgroupV1:                  *kc.FailCgroupV1,
		OOMScoreAdj:                   *kc.OOMScoreAdj,

		NodeStatusMaxImages:          *kc.NodeStatusMaxImages,
		EnableControllerAttachDetach: *kc.EnableControllerAttachDetach,
		KubeAPIQPS:                   *kc.KubeAPIQPS,
		EventRecordQPS:               *kc.EventRecordQPS,
	}
	if s.ImageServiceEndpoint == "" {
		s.ImageServiceEndpoint = kc.ContainerRuntimeEndpoint
	}
	s.UserNamespacesSupport = gateOn(kc, gateUserNamespaces)
	s.PodResourcesGet = gateOn(kc, gatePodResourcesGet)
	s.DynamicResources = gateOn(kc, gateDynamicResources)
	s.PodResourcesDynamicResources = gateOn(kc, gatePodResourcesDRA)
	s.CPUManagerOptionGates = cpuManagerOptionGates(kc)
	s.DisableCPUQuotaWithExclusiveCPUs = gateOn(kc, gateDisableCPUQuotaExclusive)
	s.ResizeExclusiveCPUs = gateOn(kc, gateResizeExclusiveCPUs)
	s.ContainerCheckpoint = gateOn(kc, gateContainerCheckpoint)
	s.SystemdWatchdog = gateOn(kc, gateSystemdWatchdog)
	s.ReloadServingCertFile = gateOn(kc, gateReloadServingCertFile)
	s.NodeSwap = gateOn(kc, gateNodeSwap)
	s.CgroupDriverFromCRI = gateOn(kc, gateCgroupDriverFromCRI)
	s.PullRuntimeHandler = gateOn(kc, gateRuntimeClassInImage)
	s.StopSignals = gateOn(kc, gateContainerStopSignals)
	s.ImageVolumes = gateOn(kc, gateImageVolume)
	if kc.MaxParallelImagePulls != nil {
		s.MaxParallelImagePulls = *kc.MaxParallelImagePulls
	}
	return s
}
