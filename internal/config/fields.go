package config

import (
	"encoding/json"
	"reflect"
	"strings"

	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"
)

// Every KubeletConfiguration field is accounted for: acted on (where, briefly), refused when
// set to anything but what upstream does nothing with (unsupportedFields, or validation that
// refuses it), or inert in upstream too. A field added by a newer k8s.io/kubelet fails this
// test until someone decides which it is — nodelet never accepts a setting it silently ignores.
// docs/flags-and-config.md is generated from these lists (reference.go).
var actedOn = map[string]string{
	"enableServer": "server", "staticPodPath": "file source", "podLogsDir": "runtime logs",
	"syncFrequency": "pod workers", "fileCheckFrequency": "file source", "httpCheckFrequency": "URL source",
	"staticPodURL": "URL source", "staticPodURLHeader": "URL source", "address": "server", "port": "server",
	"readOnlyPort": "server", "tlsCertFile": "server", "tlsPrivateKeyFile": "server", "tlsCipherSuites": "server",
	"tlsMinVersion": "server", "rotateCertificates": "certificates", "serverTLSBootstrap": "certificates",
	"authentication.x509.clientCAFile": "server authn", "authentication.webhook.enabled": "server authn",
	"authentication.webhook.cacheTTL": "server authn", "authentication.anonymous.enabled": "server authn",
	"authorization.mode": "server authz", "authorization.webhook.cacheAuthorizedTTL": "server authz",
	"authorization.webhook.cacheUnauthorizedTTL": "server authz", "registryPullQPS": "images",
	"registryBurst": "images", "eventRecordQPS": "kubeclient", "eventBurst": "kubeclient",
	"enableDebuggingHandlers": "server", "healthzPort": "healthz", "healthzBindAddress": "healthz",
	"oomScoreAdj": "app/host", "clusterDomain": "containeropts DNS", "clusterDNS": "containeropts DNS",
	"nodeStatusUpdateFrequency": "node", "nodeStatusReportFrequency": "node", "nodeLeaseDurationSeconds": "node lease",
	"imageMinimumGCAge": "imagegc", "imageMaximumGCAge": "imagegc", "imageGCHighThresholdPercent": "imagegc",
	"imageGCLowThresholdPercent": "imagegc", "kubeletCgroups": "cm", "systemCgroups": "cm",
	"cgroupRoot": "cm", "cgroupsPerQOS": "cm", "cgroupDriver": "cm", "runtimeRequestTimeout": "cri",
	"maxPods": "admission, node", "podPidsLimit": "cm", "resolvConf": "containeropts DNS", "runOnce": "runonce",
	"cpuCFSQuota": "runtime, cm", "nodeStatusMaxImages": "node", "maxOpenFiles": "app/host",
	"contentType": "kubeclient", "kubeAPIQPS": "kubeclient", "kubeAPIBurst": "kubeclient",
	"serializeImagePulls": "images", "maxParallelImagePulls": "images", "evictionHard": "eviction",
	"evictionSoft": "eviction", "evictionSoftGracePeriod": "eviction", "evictionPressureTransitionPeriod": "eviction",
	"evictionMaxPodGracePeriod": "eviction", "evictionMinimumReclaim": "eviction",
	"mergeDefaultEvictionSettings": "defaults", "podsPerCore": "app", "enableControllerAttachDetach": "node",
	"protectKernelDefaults": "sysctl", "failSwapOn": "app/host", "containerLogMaxSize": "logs rotation",
	"containerLogMaxFiles": "logs rotation", "containerLogMonitorInterval": "logs rotation",
	"systemReserved": "node, cm", "kubeReserved": "node, cm", "systemReservedCgroup": "cm",
	"kubeReservedCgroup": "cm", "enforceNodeAllocatable": "cm", "allowedUnsafeSysctls": "admission",
	"providerID": "node", "logging.format": "klog text (validation refuses the others)",
	"logging.flushFrequency": "klog flush daemon (config.applyLogging)", "logging.verbosity": "klog -v (config.applyLogging)",
	"logging.vmodule": "klog --vmodule (config.applyVModule)", "enableSystemLogHandler": "server",
	"enableProfilingHandler": "server", "enableDebugFlagsHandler": "server", "seccompDefault": "containeropts security",
	"registerWithTaints": "node, admission", "registerNode": "node", "localStorageCapacityIsolation": "eviction",
	"containerRuntimeEndpoint": "cri", "imageServiceEndpoint": "cri, images", "failCgroupV1": "app/host",
	"configMapAndSecretChangeDetectionStrategy": "objects",
	"shutdownGracePeriod":                       "shutdown", "shutdownGracePeriodCriticalPods": "shutdown", "shutdownGracePeriodByPodPriority": "shutdown",
	"memoryManagerPolicy": "cm/memorymanager",
	"reservedMemory":      "cm/memorymanager (Static; unused under None, as upstream)",
	"cpuManagerPolicy":    "cm/cpumanager", "cpuManagerPolicyOptions": "cm/cpumanager (full-pcpus-only, distribute-cpus-across-numa, strict-cpu-reservation, by their feature gates; the others refused when true)",
	"cpuManagerReconcilePeriod": "cm/cpumanager reconcile loop", "reservedSystemCPUs": "cm/cpumanager, node allocatable",
	"featureGates":            "every upstream 1.33 gate at its default; at the other value only the gates nodelet acts on (gates.go); unknown and locked gates refused as upstream",
	"kernelMemcgNotification": "eviction (the memory cgroups from cm; refused without cgroup v1 pod cgroups)",
	"topologyManagerPolicy":   "cm/topologymanager", "topologyManagerScope": "cm/topologymanager",
	"topologyManagerPolicyOptions": "cm/topologymanager (unknown options refused)",
	"memorySwap.swapBehavior":      "runtime (containers' swap limit; LimitedSwap on cgroup v2 only, as upstream)",
	"singleProcessOOMKill":         "runtime (memory.oom.group on cgroup v2; refused as false on v1, as upstream)",
}

// inertUpstream: upstream itself does nothing with these without an alpha gate (refused here)
// or any more (kubenet, the iptables bits), so accepting them matches it.
var inertUpstream = map[string]string{
	"qosReserved": "only with the QOSReserved alpha gate", "memoryThrottlingFactor": "only with the MemoryQoS alpha gate",
	"hairpinMode": "only kubenet used it", "iptablesMasqueradeBit": "deprecated, unused", "iptablesDropBit": "deprecated, unused",
	"makeIPTablesUtilChains":         "nodelet creates no canary chains (a documented difference)",
	"streamingConnectionIdleTimeout": "upstream stores it but proxies streams to the runtime, which times them out",
}

// walkSettings calls visit with the dotted path and type of every KubeletConfiguration field
// that is in the file (the fields of embedded structs as their parent's), and descends into a
// field's struct when visit returns true.
func walkSettings(visit func(path string, typ reflect.Type) bool) {
	var walk func(prefix string, typ reflect.Type)
	walk = func(prefix string, typ reflect.Type) {
		for i := range typ.NumField() {
			f := typ.Field(i)
			name := strings.Split(f.Tag.Get("json"), ",")[0]
			if f.Anonymous && prefix == "" || name == "-" {
				continue // TypeMeta; fields not in the file
			}
			if f.Anonymous { // an embedded struct's fields are this struct's
				walk(prefix, derefType(f.Type))
				continue
			}
			if visit(prefix+name, f.Type) {
				walk(prefix+name+".", derefType(f.Type))
			}
		}
	}
	walk("", reflect.TypeOf(kubeletconfigv1beta1.KubeletConfiguration{}))
}

var jsonMarshaler = reflect.TypeFor[json.Marshaler]()

// isNestedSettings says whether a field of this type holds several settings: a struct of the
// configuration's own (not a value type such as a Duration or a quantity, which marshals
// itself, nor an API type such as a Taint, which is one setting).
func isNestedSettings(typ reflect.Type) bool {
	typ = derefType(typ)
	return typ.Kind() == reflect.Struct && !reflect.PointerTo(typ).Implements(jsonMarshaler) &&
		!strings.HasPrefix(typ.PkgPath(), "k8s.io/apimachinery/") && !strings.HasPrefix(typ.PkgPath(), "k8s.io/api/")
}

func derefType(typ reflect.Type) reflect.Type {
	if typ.Kind() == reflect.Pointer {
		return typ.Elem()
	}
	return typ
}
