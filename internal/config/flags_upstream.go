package config

import (
	"time"

	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
)

// CloudProviderExternal is the one --cloud-provider nodelet takes besides none, as upstream
// 1.33, which has no in-tree cloud provider left.
const CloudProviderExternal = "external"

// upstreamFlag is one flag of the upstream kubelet, as zz_generated_flags.go lists it.
type upstreamFlag struct {
	Default    string
	Deprecated string // the deprecation notice; empty when the flag is not deprecated
}

// addUpstreamFlags binds the rest of the upstream kubelet's flags: the drop-in directory,
// feature gates, the cloud provider, the configuration fields not bound with their component's
// flags, and the deprecated flags upstream 1.33 still takes (flags_deprecated.go).
func addUpstreamFlags(fs *pflag.FlagSet, f *Flags) {
	fs.StringVar(&f.ConfigDir, "config-dir", "", "Directory of KubeletConfiguration drop-ins (*.conf, subdirectories included, in lexical order) merged over --config as upstream merges them: a later file wins field by field, maps merge key by key, lists are replaced whole. Flags given on the command line override the result.")
	fs.StringVar(&f.CloudProvider, "cloud-provider", "", `"external" registers the Node with the node.cloudprovider.kubernetes.io/uninitialized=true:NoSchedule taint for the cloud controller manager to remove, and leaves the addresses it sets alone (--node-ip is passed to it as the alpha.kubernetes.io/provided-node-ip annotation); empty means no cloud provider. Upstream 1.33 has no in-tree providers, so any other value is refused, as upstream refuses it.`)
	fs.Var(&gatesValue{gates: &f.featureGates}, "feature-gates", "Feature gates as key=value pairs separated by commas, merged gate by gate over featureGates. Every gate of the upstream kubelet "+upstreamVersion+" is accepted at its default; see the feature gates section of docs/flags-and-config.md for which nodelet also takes at the other value.")

	bindField(f, fs.BoolVar, "contention-profiling", func(kc *kubeletConfig) *bool { return &kc.EnableContentionProfiling }, "Not supported: block profiling; only false is accepted (enableContentionProfiling).")
	bindField(f, fs.DurationVar, "volume-stats-agg-period", func(kc *kubeletConfig) *time.Duration { return &kc.VolumeStatsAggPeriod.Duration }, "Not supported: volumes' disk use is measured on nodelet's own schedule; only 1m0s is accepted (volumeStatsAggPeriod).")
	bindPointer(f, fs.BoolVar, "enable-controller-attach-detach", func(kc *kubeletConfig) **bool { return &kc.EnableControllerAttachDetach }, "Leave attaching and detaching this node's volumes to the controller manager (enableControllerAttachDetach).")
	bindPointer(f, fs.BoolVar, "fail-cgroupv1", func(kc *kubeletConfig) **bool { return &kc.FailCgroupV1 }, "Refuse to start on a host using cgroup v1 (failCgroupV1).")
	bindPointer(f, fs.BoolVar, "make-iptables-util-chains", func(kc *kubeletConfig) **bool { return &kc.MakeIPTablesUtilChains }, "Accepted as upstream; nodelet creates no iptables canary chains either way (makeIPTablesUtilChains).")
	bindField(f, fs.StringToStringVar, "qos-reserved", func(kc *kubeletConfig) *map[string]string { return &kc.QOSReserved }, "Accepted and inert, as upstream without its QOSReserved alpha gate (which nodelet refuses) (qosReserved).")
	addLoggingFlags(fs, f)
	period := f.values.CPUCFSQuotaPeriod.Duration
	fs.DurationVar(&period, "cpu-cfs-quota-period", period, "Not supported: the CFS period of CPU limits; only 100ms is accepted (cpuCFSQuotaPeriod).")
	f.addOverride("cpu-cfs-quota-period", func(kc *kubeletConfig) { kc.CPUCFSQuotaPeriod = &metav1.Duration{Duration: period} })
	addDeprecatedFlags(fs, f)
}

// cloudProvider refuses what the upstream kubelet 1.33 refuses: an in-tree provider's name.
func (v *validator) cloudProvider(name string) {
	if name != "" && name != CloudProviderExternal {
		v.add("--cloud-provider", "cloud provider %q was specified, but built-in cloud providers are disabled. Please set --cloud-provider=external and migrate to an external cloud provider", name)
	}
}

// logIgnoredCloudConfig says, as there is no in-tree provider to read it, that --cloud-config
// is not read (the upstream kubelet 1.33 does not read it either).
func logIgnoredCloudConfig(fs *pflag.FlagSet, f *Flags) {
	if fs.Changed("cloud-config") && f.deprecated.cloudConfig != "" {
		klog.InfoS("Flag --cloud-config is not read: only an in-tree cloud provider would, and neither nodelet nor the upstream kubelet 1.33 has one", "file", f.deprecated.cloudConfig)
	}
}

// addLoggingFlags binds upstream's logging flags to the logging fields.
func addLoggingFlags(fs *pflag.FlagSet, f *Flags) {
	bindField(f, fs.StringVar, "logging-format", func(kc *kubeletConfig) *string { return &kc.Logging.Format }, "Log format; nodelet writes klog text, so only text is accepted (logging.format).")
	bindField(f, fs.DurationVar, "log-flush-frequency", func(kc *kubeletConfig) *time.Duration { return &kc.Logging.FlushFrequency.Duration.Duration }, "Longest time between log flushes (logging.flushFrequency).")
	bindField(f, fs.BoolVar, "log-text-split-stream", func(kc *kubeletConfig) *bool { return &kc.Logging.Options.Text.SplitStream }, "Not supported: info to stdout and errors to stderr; only false is accepted (logging.options.text.splitStream).")
	size := &f.values.Logging.Options.Text.InfoBufferSize
	fs.Var(size, "log-text-info-buffer-size", "Not supported: buffering of the info stream when split; only 0 is accepted (logging.options.text.infoBufferSize).")
	f.addOverride("log-text-info-buffer-size", func(kc *kubeletConfig) { kc.Logging.Options.Text.InfoBufferSize = *size })
}
