package config

import (
	"reflect"
	"strings"
	"testing"

	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"
)

// Every KubeletConfiguration field is accounted for: acted on (where, briefly), refused when
// set to anything but what upstream does nothing with (unsupportedFields, or validation that
// refuses it), or inert in upstream too. A field added by a newer k8s.io/kubelet fails this
// test until someone decides which it is — nodelet never accepts a setting it silently ignores.
var actedOn = map[string]string{
	"enableServer": "server", "staticPodPath": "file source", "podLogsDir": "runtime logs",
	"syncFrequency": "pod workers", "fileCheckFrequency": "file source", "httpCheckFrequency": "URL source",
	"staticPodURL": "URL source", "staticPodURLHeader": "URL source", "address": "server", "port": "server",
	"readOnlyPort": "server", "tlsCertFile": "server", "tlsPrivateKeyFile": "server", "tlsCipherSuites": "server",
	"tlsMinVersion": "server", "rotateCertificates": "certificates", "serverTLSBootstrap": "certificates",
	"authentication": "server authn", "authorization": "server authz", "registryPullQPS": "images",
	"registryBurst": "images", "eventRecordQPS": "kubeclient", "eventBurst": "kubeclient",
	"enableDebuggingHandlers": "server", "healthzPort": "healthz", "healthzBindAddress": "healthz",
	"oomScoreAdj": "app/host", "clusterDomain": "runtime DNS", "clusterDNS": "runtime DNS",
	"nodeStatusUpdateFrequency": "node", "nodeStatusReportFrequency": "node", "nodeLeaseDurationSeconds": "node lease",
	"imageMinimumGCAge": "imagegc", "imageMaximumGCAge": "imagegc", "imageGCHighThresholdPercent": "imagegc",
	"imageGCLowThresholdPercent": "imagegc", "kubeletCgroups": "cgroups", "systemCgroups": "cgroups",
	"cgroupRoot": "cgroups", "cgroupsPerQOS": "cgroups", "cgroupDriver": "cgroups", "runtimeRequestTimeout": "runtime",
	"maxPods": "admission, node", "podPidsLimit": "cgroups", "resolvConf": "runtime DNS", "runOnce": "app",
	"cpuCFSQuota": "runtime, cgroups", "nodeStatusMaxImages": "node", "maxOpenFiles": "app/host",
	"contentType": "kubeclient", "kubeAPIQPS": "kubeclient", "kubeAPIBurst": "kubeclient",
	"serializeImagePulls": "images", "maxParallelImagePulls": "images", "evictionHard": "eviction",
	"evictionSoft": "eviction", "evictionSoftGracePeriod": "eviction", "evictionPressureTransitionPeriod": "eviction",
	"evictionMaxPodGracePeriod": "eviction", "evictionMinimumReclaim": "eviction",
	"mergeDefaultEvictionSettings": "defaults", "podsPerCore": "app", "enableControllerAttachDetach": "node",
	"protectKernelDefaults": "sysctl", "failSwapOn": "app/host", "containerLogMaxSize": "logs rotation",
	"containerLogMaxFiles": "logs rotation", "containerLogMonitorInterval": "logs rotation",
	"systemReserved": "node, cgroups", "kubeReserved": "node, cgroups", "systemReservedCgroup": "cgroups",
	"kubeReservedCgroup": "cgroups", "enforceNodeAllocatable": "cgroups", "allowedUnsafeSysctls": "admission",
	"providerID": "node", "logging": "klog (format, verbosity; vmodule is refused)", "enableSystemLogHandler": "server",
	"enableProfilingHandler": "server", "enableDebugFlagsHandler": "server", "seccompDefault": "runtime",
	"registerWithTaints": "node, admission", "registerNode": "node", "localStorageCapacityIsolation": "eviction",
	"containerRuntimeEndpoint": "runtime", "imageServiceEndpoint": "images, runtime", "failCgroupV1": "app/host",
	"configMapAndSecretChangeDetectionStrategy": "objects",
	"shutdownGracePeriod":                       "shutdown", "shutdownGracePeriodCriticalPods": "shutdown", "shutdownGracePeriodByPodPriority": "shutdown",
	"featureGates":            "refused except the gates nodelet behaves like (unsupported.go)",
	"kernelMemcgNotification": "eviction (app/eviction.go; refused without cgroup v1 pod cgroups)",
}

// inertUpstream: upstream itself does nothing with these without an alpha gate (refused here)
// or any more (kubenet, the iptables bits), so accepting them matches it.
var inertUpstream = map[string]string{
	"qosReserved": "only with the QOSReserved alpha gate", "memoryThrottlingFactor": "only with the MemoryQoS alpha gate",
	"hairpinMode": "only kubenet used it", "iptablesMasqueradeBit": "deprecated, unused", "iptablesDropBit": "deprecated, unused",
	"makeIPTablesUtilChains":         "nodelet creates no canary chains (README: a documented difference)",
	"cpuManagerReconcilePeriod":      "only with a CPU manager policy, which is refused",
	"topologyManagerScope":           "only with a topology manager policy, which is refused",
	"streamingConnectionIdleTimeout": "upstream stores it but proxies streams to the runtime, which times them out",
}

func TestEveryConfigFieldIsActedOnOrRefused(t *testing.T) {
	// A dotted entry (logging.vmodule) refuses part of a field; the field may be acted on
	// otherwise, and counts as refused when it is not.
	refused, refusedPart := map[string]bool{}, map[string]bool{}
	for _, u := range unsupportedFields {
		if top, _, dotted := strings.Cut(u.field, "."); dotted {
			refusedPart[top] = true
		} else {
			refused[u.field] = true
		}
	}
	typ := reflect.TypeOf(kubeletconfigv1beta1.KubeletConfiguration{})
	for i := range typ.NumField() {
		f := typ.Field(i)
		name := strings.Split(f.Tag.Get("json"), ",")[0]
		if f.Anonymous || name == "" {
			continue // TypeMeta
		}
		_, acted := actedOn[name]
		_, inert := inertUpstream[name]
		if refusedPart[name] && !acted && !inert {
			refused[name] = true
		}
		n := 0
		for _, in := range []bool{acted, inert, refused[name]} {
			if in {
				n++
			}
		}
		if n != 1 {
			t.Errorf("field %s: acted on %v, inert upstream %v, refused %v; it must be exactly one", name, acted, inert, refused[name])
		}
	}
}
