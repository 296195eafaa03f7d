package config

import (
	"time"

	"k8s.io/utils/ptr"
)

// unsupportedField is a setting nodelet reads, so that a configuration written for the upstream
// kubelet loads, but does not act on: only the value under which upstream would do nothing
// nodelet lacks (usually upstream's default) is accepted.
type unsupportedField struct {
	field    string
	upstream string // what the upstream kubelet would do with another value
	accepted string // the value(s) nodelet accepts
	ok       func(*kubeletConfig) bool
}

var unsupportedFields = []unsupportedField{
	{"enableSystemLogQuery", "answers journal queries on /logs", "false",
		func(c *kubeletConfig) bool { return !ptr.Deref(c.EnableSystemLogQuery, false) }},
	{"enableContentionProfiling", "turns on block profiling", "false",
		func(c *kubeletConfig) bool { return !c.EnableContentionProfiling }},
	{"podCIDR", "hands the pod range to the runtime (CRI UpdateRuntimeConfig)", "empty (the CNI configuration decides)",
		func(c *kubeletConfig) bool { return c.PodCIDR == "" }},
	{"volumePluginDir", "probes flex volume drivers there", DefaultVolumePluginDir,
		func(c *kubeletConfig) bool { return c.VolumePluginDir == DefaultVolumePluginDir }},
	{"volumeStatsAggPeriod", "measures volumes' disk use on that period (0 turns it off)", "1m0s",
		func(c *kubeletConfig) bool { return c.VolumeStatsAggPeriod.Duration == time.Minute }},
	{"cpuCFSQuotaPeriod", "uses that CFS period for CPU limits behind its CustomCPUCFSQuotaPeriod feature gate", "100ms",
		func(c *kubeletConfig) bool {
			return c.CPUCFSQuotaPeriod == nil || c.CPUCFSQuotaPeriod.Duration == 100*time.Millisecond
		}},
	{"containerLogMaxWorkers", "rotates that many containers' logs at once", "1",
		func(c *kubeletConfig) bool { return ptr.Deref(c.ContainerLogMaxWorkers, 0) == 1 }},
	{"crashLoopBackOff.maxContainerRestartPeriod", "caps the crash-loop back-off there (nodelet: always 5m)", "unset",
		func(c *kubeletConfig) bool { return c.CrashLoopBackOff.MaxContainerRestartPeriod == nil }},
	{"userNamespaces.idsPerPod", "gives each user-namespaced pod that many IDs", "unset",
		func(c *kubeletConfig) bool { return c.UserNamespaces == nil || c.UserNamespaces.IDsPerPod == nil }},
	{"imagePullCredentialsVerificationPolicy", "re-checks pull credentials of cached images", "unset",
		func(c *kubeletConfig) bool { return c.ImagePullCredentialsVerificationPolicy == "" }},
	{"preloadedImagesVerificationAllowlist", "lists images exempt from credential checks", "empty",
		func(c *kubeletConfig) bool { return len(c.PreloadedImagesVerificationAllowlist) == 0 }},
	{"showHiddenMetricsForVersion", "serves metrics deprecated in that version", "empty",
		func(c *kubeletConfig) bool { return c.ShowHiddenMetricsForVersion == "" }},
	{"tracing", "exports OpenTelemetry traces", "unset",
		func(c *kubeletConfig) bool { return c.Tracing == nil }},
	{"logging.options", "tunes the text and json log writers (splitStream, infoBufferSize) behind its LoggingAlphaOptions feature gate", "unset",
		func(c *kubeletConfig) bool {
			o := c.Logging.Options
			return !o.Text.SplitStream && o.Text.InfoBufferSize.Value() == 0 && !o.JSON.SplitStream && o.JSON.InfoBufferSize.Value() == 0
		}},
}

// checkUnsupported refuses every setting nodelet would otherwise silently ignore.
func (v *validator) checkUnsupported(c *kubeletConfig) {
	for _, u := range unsupportedFields {
		if !u.ok(c) {
			v.add(u.field, "is not supported by nodelet (the upstream kubelet %s); only %s is accepted", u.upstream, u.accepted)
		}
	}
	v.checkFeatureGates(c.FeatureGates)
	if on, set := c.FeatureGates["GracefulNodeShutdownBasedOnPodPriority"]; set && !on && len(c.ShutdownGracePeriodByPodPriority) > 0 {
		v.add("shutdownGracePeriodByPodPriority", "needs the feature gate GracefulNodeShutdownBasedOnPodPriority, which featureGates turns off; remove one of them")
	}
}
