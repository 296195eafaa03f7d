package config

import (
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"
	"k8s.io/utils/ptr"
)

type kc = kubeletconfigv1beta1.KubeletConfiguration

func dur(d time.Duration) metav1.Duration { return metav1.Duration{Duration: d} }

func TestValidateNamesTheField(t *testing.T) {
	tests := []struct {
		field  string // expected "invalid configuration: <field>: " prefix
		detail string // expected somewhere in the message
		mutate func(*kc)
	}{
		{"syncFrequency", "must be > 0, got -1s", func(c *kc) { c.SyncFrequency = dur(-time.Second) }},
		{"fileCheckFrequency", "must be > 0", func(c *kc) { c.FileCheckFrequency = dur(0) }},
		{"httpCheckFrequency", "must be > 0", func(c *kc) { c.HTTPCheckFrequency = dur(-time.Minute) }},
		{"nodeStatusUpdateFrequency", "must be > 0", func(c *kc) { c.NodeStatusUpdateFrequency = dur(0) }},
		{"runtimeRequestTimeout", "must be > 0", func(c *kc) { c.RuntimeRequestTimeout = dur(0) }},
		{"nodeLeaseDurationSeconds", "must be > 0, got 0", func(c *kc) { c.NodeLeaseDurationSeconds = 0 }},
		{"port", "between 0 and 65535, got 65536", func(c *kc) { c.Port = 65536 }},
		{"memorySwap.swapBehavior", "cannot be set when NodeSwap feature flag is disabled", func(c *kc) {
			c.FeatureGates = map[string]bool{"NodeSwap": false}
			c.MemorySwap.SwapBehavior = "LimitedSwap"
		}},
		{"readOnlyPort", "got -1", func(c *kc) { c.ReadOnlyPort = -1 }},
		{"healthzPort", "got 70000", func(c *kc) { c.HealthzPort = ptr.To[int32](70000) }},
		{"healthzBindAddress", `must be an IP address, got "localhost"`, func(c *kc) { c.HealthzBindAddress = "localhost" }},
		{"address", "must be an IP address", func(c *kc) { c.Address = "example.com" }},
		{"maxPods", "must be >= 0, got -1", func(c *kc) { c.MaxPods = -1 }},
		{"podPidsLimit", "must be >= -1, got -2", func(c *kc) { c.PodPidsLimit = ptr.To[int64](-2) }},
		{"imageGCHighThresholdPercent", "between 0 and 100, got 101", func(c *kc) { c.ImageGCHighThresholdPercent = ptr.To[int32](101) }},
		{"imageGCLowThresholdPercent", "between 0 and 100, got -5", func(c *kc) { c.ImageGCLowThresholdPercent = ptr.To[int32](-5) }},
		{"imageGCLowThresholdPercent", "must be less than imageGCHighThresholdPercent (85), got 85", func(c *kc) { c.ImageGCLowThresholdPercent = ptr.To[int32](85) }},
		{"imageMaximumGCAge", "greater than imageMinimumGCAge", func(c *kc) { c.ImageMaximumGCAge = dur(time.Minute) }},
		{"cgroupDriver", `got "docker"`, func(c *kc) { c.CgroupDriver = "docker" }},
		{"cgroupRoot", "absolute", func(c *kc) { c.CgroupRoot = "kubepods" }},
		{"containerLogMaxFiles", "must be >= 2, got 1", func(c *kc) { c.ContainerLogMaxFiles = ptr.To[int32](1) }},
		{"containerLogMaxSize", "quantity", func(c *kc) { c.ContainerLogMaxSize = "ten megs" }},
		{"containerLogMonitorInterval", ">= 3s", func(c *kc) { c.ContainerLogMonitorInterval = ptr.To(dur(time.Second)) }},
		{"evictionHard", `unknown eviction signal "memory"`, func(c *kc) { c.EvictionHard = map[string]string{"memory": "1Gi"} }},
		{`evictionHard["nodefs.available"]`, "percentage", func(c *kc) { c.EvictionHard["nodefs.available"] = "120%" }},
		{`evictionHard["memory.available"]`, "quantity", func(c *kc) { c.EvictionHard["memory.available"] = "lots" }},
		{`evictionSoft["memory.available"]`, "evictionSoftGracePeriod", func(c *kc) { c.EvictionSoft = map[string]string{"memory.available": "1Gi"} }},
		{`evictionSoftGracePeriod["memory.available"]`, "duration", func(c *kc) {
			c.EvictionSoft = map[string]string{"memory.available": "1Gi"}
			c.EvictionSoftGracePeriod = map[string]string{"memory.available": "soon"}
		}},
		{"staticPodURL", `got "ftp://example.com/pods"`, func(c *kc) { c.StaticPodURL = "ftp://example.com/pods" }},
		{"staticPodURL", "http or https", func(c *kc) { c.StaticPodURL = "http://" }},
		{"staticPodURLHeader", `"bad header"`, func(c *kc) { c.StaticPodURLHeader = map[string][]string{"bad header": {"x"}} }},
		{"containerRuntimeEndpoint", "must not be empty", func(c *kc) { c.ContainerRuntimeEndpoint = "" }},
		{"containerRuntimeEndpoint", "unix://", func(c *kc) { c.ContainerRuntimeEndpoint = "tcp://127.0.0.1:5000" }},
		{"imageServiceEndpoint", "absolute", func(c *kc) { c.ImageServiceEndpoint = "unix://relative.sock" }},
		{"hairpinMode", `got "always"`, func(c *kc) { c.HairpinMode = "always" }},
		{"authorization.mode", `got "RBAC"`, func(c *kc) { c.Authorization.Mode = "RBAC" }},
		{"tlsMinVersion", `got "TLS1.2"`, func(c *kc) { c.TLSMinVersion = "TLS1.2" }},
		{"tlsCipherSuites[0]", "unknown cipher suite", func(c *kc) { c.TLSCipherSuites = []string{"TLS_NOPE"} }},
		{"tlsPrivateKeyFile", "together", func(c *kc) { c.TLSCertFile = "/etc/cert.pem" }},
		{"clusterDNS[1]", `got "dns"`, func(c *kc) { c.ClusterDNS = []string{"10.0.0.10", "dns"} }},
		{"clusterDomain", "", func(c *kc) { c.ClusterDomain = "Cluster_Local" }},
		{"podCIDR", "CIDR", func(c *kc) { c.PodCIDR = "10.0.0.0" }},
		{"registerWithTaints[0]", "effect", func(c *kc) { c.RegisterWithTaints = []corev1.Taint{{Key: "a", Effect: "Never"}} }},
		{"registerWithTaints[0]", "key", func(c *kc) { c.RegisterWithTaints = []corev1.Taint{{Key: "a b", Effect: corev1.TaintEffectNoSchedule}} }},
		{"oomScoreAdj", "between -1000 and 1000", func(c *kc) { c.OOMScoreAdj = ptr.To[int32](-1001) }},
		{"registryPullQPS", "must be >= 0", func(c *kc) { c.RegistryPullQPS = ptr.To[int32](-1) }},
		{"eventBurst", "must be >= 0", func(c *kc) { c.EventBurst = -1 }},
		{"maxParallelImagePulls", "serializeImagePulls", func(c *kc) { c.MaxParallelImagePulls = ptr.To[int32](4) }},
		{"memoryThrottlingFactor", "greater than 0", func(c *kc) { c.MemoryThrottlingFactor = ptr.To(1.5) }},
		{"enforceNodeAllocatable", "cgroupsPerQOS", func(c *kc) { c.CgroupsPerQOS = ptr.To(false) }},
		{"enforceNodeAllocatable", `got "everything"`, func(c *kc) { c.EnforceNodeAllocatable = []string{"everything"} }},
		{"systemReservedCgroup", "must be set", func(c *kc) { c.EnforceNodeAllocatable = []string{"pods", "system-reserved"} }},
		{`systemReserved["memory"]`, "quantity", func(c *kc) { c.SystemReserved = map[string]string{"memory": "-1Gi"} }},
		{"kubeReserved", `cannot reserve "gpu" resource`, func(c *kc) { c.KubeReserved = map[string]string{"gpu": "1"} }},
		{"systemReserved", `cannot reserve "hugepages-2Mi" resource`, func(c *kc) { c.SystemReserved = map[string]string{"hugepages-2Mi": "2Mi"} }},
		{"shutdownGracePeriodCriticalPods", "must not exceed shutdownGracePeriod", func(c *kc) { c.ShutdownGracePeriodCriticalPods = dur(time.Second) }},
		{"shutdownGracePeriod", "must be >= 0", func(c *kc) { c.ShutdownGracePeriod = dur(-time.Second) }},
		{"logging.format", `got "json"`, func(c *kc) { c.Logging.Format = "json" }},
		{"cpuCFSQuotaPeriod", "between 1ms and 1s", func(c *kc) { c.CPUCFSQuotaPeriod = ptr.To(dur(2 * time.Second)) }},
		{"topologyManagerScope", `got "node"`, func(c *kc) { c.TopologyManagerScope = "node" }},
		{"podLogsDir", "absolute", func(c *kc) { c.PodLogsDir = "logs" }},
	}
	for _, tt := range tests {
		t.Run(tt.field+" "+tt.detail, func(t *testing.T) {
			c := defaulted()
			tt.mutate(c)
			err := Validate(c)
			if err == nil {
				t.Fatal("Validate accepted the configuration")
			}
			prefix := "invalid configuration: " + tt.field + ": "
			var found bool
			for _, line := range strings.Split(err.Error(), "\n") {
				if strings.HasPrefix(line, prefix) && strings.Contains(line, tt.detail) {
					found = true
				}
			}
			if !found {
				t.Errorf("error does not report %q with %q:\n%v", prefix, tt.detail, err)
			}
		})
	}
}

func TestValidateReportsEveryError(t *testing.T) {
	c := defaulted()
	c.MaxPods = -1
	c.SyncFrequency = dur(0)
	c.CgroupDriver = "upstart"
	c.HealthzPort = ptr.To[int32](-3)

	err := Validate(c)
	if err == nil {
		t.Fatal("Validate accepted the configuration")
	}
	lines := strings.Split(err.Error(), "\n")
	if len(lines) != 4 {
		t.Errorf("want 4 errors, one per line, got %d:\n%v", len(lines), err)
	}
	for _, field := range []string{"maxPods", "syncFrequency", "cgroupDriver", "healthzPort"} {
		if !strings.Contains(err.Error(), "invalid configuration: "+field+": ") {
			t.Errorf("error does not name %s:\n%v", field, err)
		}
	}
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Field == "" {
		t.Errorf("errors.As(FieldError) failed on %v", err)
	}
}

func TestValidateAcceptsGoodValues(t *testing.T) {
	c := defaulted()
	c.ReadOnlyPort = 10255
	c.HealthzPort = ptr.To[int32](0)
	c.StaticPodURL = "https://example.com/pods.yaml"
	c.StaticPodURLHeader = map[string][]string{"Authorization": {"Bearer x"}}
	c.ClusterDNS = []string{"10.96.0.10", "fd00::a"}
	c.ClusterDomain = "cluster.local."
	c.ContainerRuntimeEndpoint = "/run/nodelet/containerd/containerd.sock"
	c.TLSMinVersion = "VersionTLS12"
	c.TLSCipherSuites = []string{"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"}
	c.EvictionHard = map[string]string{"memory.available": "0%", "nodefs.available": "1Gi"}
	c.EvictionSoft = map[string]string{"memory.available": "500Mi"}
	c.EvictionSoftGracePeriod = map[string]string{"memory.available": "1m30s"}
	c.CgroupsPerQOS = ptr.To(false)
	c.EnforceNodeAllocatable = []string{}
	c.RegisterWithTaints = []corev1.Taint{{Key: "example.com/dedicated", Value: "db", Effect: corev1.TaintEffectNoExecute}}
	c.SystemReserved = map[string]string{"cpu": "100m", "memory": "256Mi", "pid": "100"}
	if err := Validate(c); err != nil {
		t.Errorf("Validate rejected a good configuration: %v", err)
	}
}

func TestValidateRefusesSettingsNodeletWouldIgnore(t *testing.T) {
	tests := []struct {
		field  string
		mutate func(*kc)
	}{
		{"cpuCFSQuotaPeriod", func(c *kc) { c.CPUCFSQuotaPeriod = ptr.To(dur(50 * time.Millisecond)) }},
		{`featureGates["MemoryQoS"]`, func(c *kc) { c.FeatureGates = map[string]bool{"MemoryQoS": true} }},
		{`featureGates["ImageMaximumGCAge"]`, func(c *kc) { c.FeatureGates = map[string]bool{"ImageMaximumGCAge": false} }},
		{"logging.options", func(c *kc) { c.Logging.Options.Text.SplitStream = true }},
		{"logging.options", func(c *kc) { c.Logging.Options.JSON.InfoBufferSize.Set("64Ki") }},
	}
	for _, tt := range tests {
		t.Run(tt.field, func(t *testing.T) {
			c := defaulted()
			tt.mutate(c)
			err := Validate(c)
			want := "invalid configuration: " + tt.field + ": is not supported by nodelet"
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("want %q, got %v", want, err)
			}
		})
	}
	// The same endpoint for images as for containers is what nodelet does anyway, and so are
	// these gates.
	c := defaulted()
	c.ImageServiceEndpoint = c.ContainerRuntimeEndpoint
	c.FeatureGates = map[string]bool{"PodAndContainerStatsFromCRI": true, "ImageMaximumGCAge": true, "GracefulNodeShutdown": true,
		"GracefulNodeShutdownBasedOnPodPriority": false, "PodReadyToStartContainersCondition": true, "UserNamespacesSupport": false,
		"KubeletPodResourcesGet": true}
	c.ShutdownGracePeriod = dur(20 * time.Second)
	if err := Validate(c); err != nil {
		t.Errorf("settings nodelet behaves like refused: %v", err)
	}
	// By-priority periods with the by-priority gate off: upstream refuses that, so does nodelet.
	c.ShutdownGracePeriod = dur(0)
	c.ShutdownGracePeriodByPodPriority = []kubeletconfigv1beta1.ShutdownGracePeriodByPodPriority{{Priority: 0, ShutdownGracePeriodSeconds: 10}}
	if err := Validate(c); err == nil || !strings.Contains(err.Error(), "shutdownGracePeriodByPodPriority: needs the feature gate GracefulNodeShutdownBasedOnPodPriority") {
		t.Errorf("by-priority periods with the gate off: %v", err)
	}
}
