package config

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	cliflag "k8s.io/component-base/cli/flag"
	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"
	"k8s.io/utils/ptr"
)

// FieldError is one invalid setting, named by its path in the
// KubeletConfiguration (or by its flag when it has no such path).
type FieldError struct {
	Field  string
	Detail string
}

func (e *FieldError) Error() string {
	return "invalid configuration: " + e.Field + ": " + e.Detail
}

// validator collects every problem instead of stopping at the first, so one
// run tells the user about all bad fields.
type validator struct {
	errs []error
}

func (v *validator) add(field, format string, args ...any) {
	v.errs = append(v.errs, &FieldError{Field: field, Detail: fmt.Sprintf(format, args...)})
}

func (v *validator) err() error {
	return errors.Join(v.errs...)
}

// Validate checks a (normally defaulted) KubeletConfiguration and returns one
// joined error holding a FieldError for every invalid field, or nil.
func Validate(kc *kubeletconfigv1beta1.KubeletConfiguration) error {
	v := &validator{}
	v.checkDurations(kc)
	v.checkServer(kc)
	v.checkImages(kc)
	v.checkLimits(kc)
	v.checkCgroups(kc)
	v.checkReservedMemory(kc)
	v.checkNodeAllocatable(kc)
	v.checkEviction(kc)
	v.checkRuntime(kc)
	v.checkPodSources(kc)
	v.checkNetworking(kc)
	v.checkShutdown(kc)
	v.checkCPUManager(kc)
	v.checkMisc(kc)
	v.checkTopologyManager(kc)
	v.checkUnsupported(kc)
	return v.err()
}

func (v *validator) positive(field string, d metav1.Duration) {
	if d.Duration <= 0 {
		v.add(field, "must be > 0, got %s", d.Duration)
	}
}

func (v *validator) nonNegative(field string, d metav1.Duration) {
	if d.Duration < 0 {
		v.add(field, "must be >= 0, got %s", d.Duration)
	}
}

func (v *validator) atLeast(field string, got, min int64) {
	if got < min {
		v.add(field, "must be >= %d, got %d", min, got)
	}
}

func (v *validator) between(field string, got, min, max int64) {
	if got < min || got > max {
		v.add(field, "must be between %d and %d, got %d", min, max, got)
	}
}

func (v *validator) oneOf(field, got string, allowed ...string) {
	if !slices.Contains(allowed, got) {
		v.add(field, "must be one of %s, got %q", quoteAll(allowed), got)
	}
}

func (v *validator) ip(field, got string) {
	if net.ParseIP(got) == nil {
		v.add(field, "must be an IP address, got %q", got)
	}
}

func (v *validator) checkDurations(kc *kubeletconfigv1beta1.KubeletConfiguration) {
	v.positive("syncFrequency", kc.SyncFrequency)
	v.positive("fileCheckFrequency", kc.FileCheckFrequency)
	v.positive("httpCheckFrequency", kc.HTTPCheckFrequency)
	v.positive("nodeStatusUpdateFrequency", kc.NodeStatusUpdateFrequency)
	v.positive("nodeStatusReportFrequency", kc.NodeStatusReportFrequency)
	v.positive("runtimeRequestTimeout", kc.RuntimeRequestTimeout)
	v.nonNegative("streamingConnectionIdleTimeout", kc.StreamingConnectionIdleTimeout)
	v.nonNegative("volumeStatsAggPeriod", kc.VolumeStatsAggPeriod)
	v.nonNegative("cpuManagerReconcilePeriod", kc.CPUManagerReconcilePeriod)
	v.nonNegative("evictionPressureTransitionPeriod", kc.EvictionPressureTransitionPeriod)
	v.nonNegative("authentication.webhook.cacheTTL", kc.Authentication.Webhook.CacheTTL)
	v.nonNegative("authorization.webhook.cacheAuthorizedTTL", kc.Authorization.Webhook.CacheAuthorizedTTL)
	v.nonNegative("authorization.webhook.cacheUnauthorizedTTL", kc.Authorization.Webhook.CacheUnauthorizedTTL)
	if kc.NodeLeaseDurationSeconds <= 0 {
		v.add("nodeLeaseDurationSeconds", "must be > 0, got %d", kc.NodeLeaseDurationSeconds)
	}
}

func (v *validator) checkServer(kc *kubeletconfigv1beta1.KubeletConfiguration) {
	v.between("port", int64(kc.Port), 0, 65535)
	v.between("readOnlyPort", int64(kc.ReadOnlyPort), 0, 65535)
	if kc.HealthzPort != nil {
		v.between("healthzPort", int64(*kc.HealthzPort), 0, 65535)
		if *kc.HealthzPort > 0 || kc.HealthzBindAddress != "" {
			v.ip("healthzBindAddress", kc.HealthzBindAddress)
		}
	}
	if kc.Address != "" {
		v.ip("address", kc.Address)
	}
	if kc.TLSMinVersion != "" {
		if _, ok := tlsVersions[kc.TLSMinVersion]; !ok {
			v.oneOf("tlsMinVersion", kc.TLSMinVersion, sortedKeys(tlsVersions)...)
		}
	}
	for i, name := range kc.TLSCipherSuites {
		// upstream's names: Go's, and the legacy CHACHA20 names without _SHA256.
		if _, err := cliflag.TLSCipherSuites([]string{name}); err != nil {
			v.add(fmt.Sprintf("tlsCipherSuites[%d]", i), "unknown cipher suite %q", name)
		}
	}
	if (kc.TLSCertFile == "") != (kc.TLSPrivateKeyFile == "") {
		v.add("tlsPrivateKeyFile", "tlsCertFile and tlsPrivateKeyFile must be set together")
	}
	v.oneOf("authorization.mode", string(kc.Authorization.Mode),
		string(kubeletconfigv1beta1.KubeletAuthorizationModeAlwaysAllow),
		string(kubeletconfigv1beta1.KubeletAuthorizationModeWebhook))
}

var tlsVersions = map[string]uint16{
	"VersionTLS10": tls.VersionTLS10,
	"VersionTLS11": tls.VersionTLS11,
	"VersionTLS12": tls.VersionTLS12,
	"VersionTLS13": tls.VersionTLS13,
}

func (v *validator) checkImages(kc *kubeletconfigv1beta1.KubeletConfiguration) {
	high, low := kc.ImageGCHighThresholdPercent, kc.ImageGCLowThresholdPercent
	if high != nil {
		v.between("imageGCHighThresholdPercent", int64(*high), 0, 100)
	}
	if low != nil {
		v.between("imageGCLowThresholdPercent", int64(*low), 0, 100)
	}
	if high != nil && low != nil && *low >= *high {
		v.add("imageGCLowThresholdPercent", "must be less than imageGCHighThresholdPercent (%d), got %d", *high, *low)
	}
	v.nonNegative("imageMinimumGCAge", kc.ImageMinimumGCAge)
	v.nonNegative("imageMaximumGCAge", kc.ImageMaximumGCAge)
	if maxAge := kc.ImageMaximumGCAge.Duration; maxAge > 0 && maxAge <= kc.ImageMinimumGCAge.Duration {
		v.add("imageMaximumGCAge", "must be greater than imageMinimumGCAge (%s), got %s", kc.ImageMinimumGCAge.Duration, maxAge)
	}
	if kc.MaxParallelImagePulls != nil {
		v.atLeast("maxParallelImagePulls", int64(*kc.MaxParallelImagePulls), 1)
		if *kc.MaxParallelImagePulls > 1 && ptr.Deref(kc.SerializeImagePulls, false) {
			v.add("maxParallelImagePulls", "must be 1 or unset when serializeImagePulls is true, got %d", *kc.MaxParallelImagePulls)
		}
	}
	if kc.NodeStatusMaxImages != nil {
		v.atLeast("nodeStatusMaxImages", int64(*kc.NodeStatusMaxImages), -1)
	}
}

func (v *validator) checkLimits(kc *kubeletconfigv1beta1.KubeletConfiguration) {
	v.atLeast("maxPods", int64(kc.MaxPods), 0)
	v.atLeast("podsPerCore", int64(kc.PodsPerCore), 0)
	if kc.PodPidsLimit != nil {
		v.atLeast("podPidsLimit", *kc.PodPidsLimit, -1)
	}
	v.atLeast("maxOpenFiles", kc.MaxOpenFiles, 0)
	if kc.OOMScoreAdj != nil {
		v.between("oomScoreAdj", int64(*kc.OOMScoreAdj), -1000, 1000)
	}
	if kc.RegistryPullQPS != nil {
		v.atLeast("registryPullQPS", int64(*kc.RegistryPullQPS), 0)
	}
	v.atLeast("registryBurst", int64(kc.RegistryBurst), 0)
	if kc.EventRecordQPS != nil {
		v.atLeast("eventRecordQPS", int64(*kc.EventRecordQPS), 0)
	}
	v.atLeast("eventBurst", int64(kc.EventBurst), 0)
	if kc.KubeAPIQPS != nil {
		v.atLeast("kubeAPIQPS", int64(*kc.KubeAPIQPS), 0)
	}
	v.atLeast("kubeAPIBurst", int64(kc.KubeAPIBurst), 0)
	if kc.IPTablesMasqueradeBit != nil {
		v.between("iptablesMasqueradeBit", int64(*kc.IPTablesMasqueradeBit), 0, 31)
	}
	if kc.IPTablesDropBit != nil {
		v.between("iptablesDropBit", int64(*kc.IPTablesDropBit), 0, 31)
	}
	if f := kc.MemoryThrottlingFactor; f != nil && (*f <= 0 || *f > 1) {
		v.add("memoryThrottlingFactor", "must be greater than 0 and at most 1, got %v", *f)
	}
}

func (v *validator) checkCgroups(kc *kubeletconfigv1beta1.KubeletConfiguration) {
	v.oneOf("cgroupDriver", kc.CgroupDriver, "cgroupfs", "systemd")
	if kc.CgroupRoot != "" && !strings.HasPrefix(kc.CgroupRoot, "/") {
		v.add("cgroupRoot", "must be an absolute cgroup path, got %q", kc.CgroupRoot)
	}
	v.oneOf("memoryManagerPolicy", kc.MemoryManagerPolicy,
		kubeletconfigv1beta1.NoneMemoryManagerPolicy, kubeletconfigv1beta1.StaticMemoryManagerPolicy)
	v.oneOf("topologyManagerPolicy", kc.TopologyManagerPolicy,
		kubeletconfigv1beta1.NoneTopologyManagerPolicy, kubeletconfigv1beta1.BestEffortTopologyManagerPolicy,
		kubeletconfigv1beta1.RestrictedTopologyManagerPolicy, kubeletconfigv1beta1.SingleNumaNodeTopologyManagerPolicy)
	v.oneOf("topologyManagerScope", kc.TopologyManagerScope,
		kubeletconfigv1beta1.ContainerTopologyManagerScope, kubeletconfigv1beta1.PodTopologyManagerScope)
	if p := kc.CPUCFSQuotaPeriod; p != nil && (p.Duration < time.Millisecond || p.Duration > time.Second) {
		v.add("cpuCFSQuotaPeriod", "must be between 1ms and 1s, got %s", p.Duration)
	}
}

func (v *validator) checkRuntime(kc *kubeletconfigv1beta1.KubeletConfiguration) {
	v.endpoint("containerRuntimeEndpoint", kc.ContainerRuntimeEndpoint, true)
	v.endpoint("imageServiceEndpoint", kc.ImageServiceEndpoint, false)
	v.oneOf("hairpinMode", kc.HairpinMode,
		kubeletconfigv1beta1.HairpinVeth, kubeletconfigv1beta1.PromiscuousBridge, kubeletconfigv1beta1.HairpinNone)
	if kc.ContainerLogMaxSize != "" {
		q, err := resource.ParseQuantity(kc.ContainerLogMaxSize)
		switch {
		case err != nil:
			v.add("containerLogMaxSize", "must be a quantity such as 10Mi, got %q", kc.ContainerLogMaxSize)
		case q.Sign() < 0:
			v.add("containerLogMaxSize", "must be >= 0, got %q", kc.ContainerLogMaxSize)
		}
	}
	if kc.ContainerLogMaxFiles != nil {
		v.atLeast("containerLogMaxFiles", int64(*kc.ContainerLogMaxFiles), 2)
	}
	if kc.ContainerLogMaxWorkers != nil {
		v.atLeast("containerLogMaxWorkers", int64(*kc.ContainerLogMaxWorkers), 1)
	}
	if d := kc.ContainerLogMonitorInterval; d != nil && d.Duration < 3*time.Second {
		v.add("containerLogMonitorInterval", "must be >= 3s, got %s", d.Duration)
	}
}

// endpoint checks a CRI socket address: nodelet speaks CRI over unix sockets
// only, given as unix:///path or as a bare absolute path.
func (v *validator) endpoint(field, endpoint string, required bool) {
	if endpoint == "" {
		if required {
			v.add(field, "must not be empty")
		}
		return
	}
	path, ok := strings.CutPrefix(endpoint, "unix://")
	if !ok && strings.Contains(endpoint, "://") {
		v.add(field, "must be a unix:// socket address, got %q", endpoint)
		return
	}
	if !filepath.IsAbs(path) {
		v.add(field, "must name an absolute socket path, got %q", endpoint)
	}
}

func (v *validator) checkPodSources(kc *kubeletconfigv1beta1.KubeletConfiguration) {
	if kc.StaticPodURL != "" {
		u, err := url.Parse(kc.StaticPodURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			v.add("staticPodURL", "must be an http or https URL, got %q", RedactURL(kc.StaticPodURL))
		}
	}
	for _, name := range sortedKeys(kc.StaticPodURLHeader) {
		if !isHeaderName(name) {
			v.add("staticPodURLHeader", "invalid HTTP header name %q", name)
		}
	}
	if kc.PodLogsDir != "" && !filepath.IsAbs(kc.PodLogsDir) {
		v.add("podLogsDir", "must be an absolute path, got %q", kc.PodLogsDir)
	}
}

// isHeaderName reports whether s is a valid HTTP header field name (an RFC 7230 token).
func isHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r > 0x7e || r <= ' ' || strings.ContainsRune(`"(),/:;<=>?@[\]{}`, r) {
			return false
		}
	}
	return true
}

func (v *validator) checkNetworking(kc *kubeletconfigv1beta1.KubeletConfiguration) {
	for i, ip := range kc.ClusterDNS {
		v.ip(fmt.Sprintf("clusterDNS[%d]", i), ip)
	}
	if domain := strings.TrimSuffix(kc.ClusterDomain, "."); domain != "" {
		for _, msg := range validation.IsDNS1123Subdomain(domain) {
			v.add("clusterDomain", "%s", msg)
		}
	}
	if kc.PodCIDR != "" {
		for _, cidr := range strings.Split(kc.PodCIDR, ",") {
			if _, _, err := net.ParseCIDR(strings.TrimSpace(cidr)); err != nil {
				v.add("podCIDR", "must be a CIDR such as 10.85.0.0/16, got %q", cidr)
			}
		}
	}
	for i, taint := range kc.RegisterWithTaints {
		for _, err := range taintErrors(taint) {
			v.add(fmt.Sprintf("registerWithTaints[%d]", i), "%s", err)
		}
	}
}

func (v *validator) checkShutdown(kc *kubeletconfigv1beta1.KubeletConfiguration) {
	grace, critical := kc.ShutdownGracePeriod, kc.ShutdownGracePeriodCriticalPods
	v.nonNegative("shutdownGracePeriod", grace)
	v.nonNegative("shutdownGracePeriodCriticalPods", critical)
	if critical.Duration > grace.Duration {
		v.add("shutdownGracePeriodCriticalPods", "must not exceed shutdownGracePeriod (%s), got %s", grace.Duration, critical.Duration)
	}
	if len(kc.ShutdownGracePeriodByPodPriority) > 0 && (grace.Duration != 0 || critical.Duration != 0) {
		v.add("shutdownGracePeriodByPodPriority", "cannot be combined with shutdownGracePeriod or shutdownGracePeriodCriticalPods")
	}
	for i, p := range kc.ShutdownGracePeriodByPodPriority {
		v.atLeast(fmt.Sprintf("shutdownGracePeriodByPodPriority[%d].shutdownGracePeriodSeconds", i), p.ShutdownGracePeriodSeconds, 0)
	}
}

func (v *validator) checkMisc(kc *kubeletconfigv1beta1.KubeletConfiguration) {
	// Only klog's text output is wired up; other formats would be silently ignored.
	if kc.Logging.Format != "" {
		v.oneOf("logging.format", kc.Logging.Format, "text")
	}
	if kc.Logging.FlushFrequency.Duration.Duration <= 0 {
		v.add("logging.flushFrequency", "must be greater than 0 (the default is 5s)")
	}
	if kc.MemorySwap.SwapBehavior != "" {
		v.oneOf("memorySwap.swapBehavior", kc.MemorySwap.SwapBehavior, "NoSwap", "LimitedSwap")
		if !gateOn(kc, gateNodeSwap) {
			v.add("memorySwap.swapBehavior", "cannot be set when NodeSwap feature flag is disabled")
		}
	}
	v.oneOf("configMapAndSecretChangeDetectionStrategy", string(kc.ConfigMapAndSecretChangeDetectionStrategy),
		string(kubeletconfigv1beta1.GetChangeDetectionStrategy),
		string(kubeletconfigv1beta1.TTLCacheChangeDetectionStrategy),
		string(kubeletconfigv1beta1.WatchChangeDetectionStrategy))
	if p := kc.CrashLoopBackOff.MaxContainerRestartPeriod; p != nil && (p.Duration < time.Second || p.Duration > 300*time.Second) {
		v.add("crashLoopBackOff.maxContainerRestartPeriod", "must be between 1s and 300s, got %s", p.Duration)
	}
	if u := kc.UserNamespaces; u != nil && u.IDsPerPod != nil {
		if n := *u.IDsPerPod; n <= 0 || n%65536 != 0 || n >= 1<<32 {
			v.add("userNamespaces.idsPerPod", "must be a positive multiple of 65536 below 2^32, got %d", n)
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func quoteAll(values []string) string {
	quoted := make([]string, len(values))
	for i, s := range values {
		quoted[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(quoted, ", ")
}
