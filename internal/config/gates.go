package config

import (
	"fmt"
	"maps"
	"strconv"
	"strings"

	"k8s.io/klog/v2"
	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"

	"github.com/nodelet/nodelet/internal/cm/cmpolicy"
)

// upstreamGate is one feature gate of the upstream kubelet, as zz_generated_gates.go lists it.
type upstreamGate struct {
	Default bool
	// Stage is ALPHA, BETA, GA, DEPRECATED, or PRE-ALPHA for a gate that only exists later.
	Stage string
	// Locked gates cannot be set to anything but their default.
	Locked bool
}

// upstreamVersion is the kubelet version whose gates and flags nodelet takes.
const upstreamVersion = "1.33"

// gatesActedOn are the gates nodelet accepts at their non-default value too, because it acts on
// both values (or, for PodAndContainerStatsFromCRI, always behaves as the gate's "on"). Every
// other gate is accepted at upstream's default only. UserNamespacesSupport=false refuses pods
// that set hostUsers; KubeletPodResourcesGet turns the pod-resources API's Get on;
// CPUManagerPolicyAlphaOptions and CPUManagerPolicyBetaOptions allow the CPU manager's options
// of those stages; DisableCPUQuotaWithExclusiveCPUs runs containers with exclusive CPUs (and
// their pods' cgroups) without a CFS quota; InPlacePodVerticalScalingExclusiveCPUs lets
// Guaranteed pods be resized in place beside the static CPU and memory manager policies;
// GracefulNodeShutdownBasedOnPodPriority=false refuses shutdownGracePeriodByPodPriority;
// ContainerCheckpoint serves POST /checkpoint; SystemdWatchdog feeds a unit's WatchdogSec;
// ReloadKubeletServerCertificateFile serves tlsCertFile/tlsPrivateKeyFile anew when they change;
// NodeSwap=false keeps every container off swap and refuses memorySwap.swapBehavior;
// KubeletCgroupDriverFromCRI takes the cgroup driver the runtime reports over cgroupDriver;
// RuntimeClassInImageCriApi names the pod's runtime handler in its image pulls;
// ContainerStopSignals sends a container's lifecycle.stopSignal to the runtime and reports
// status.containerStatuses[].stopSignal (off: a pod setting it is refused); ImageVolume
// mounts image volumes (on a runtime that can: containerd 2.1 or later);
// DynamicResourceAllocation registers DRA drivers and prepares pods' ResourceClaims (off:
// such pods are refused); KubeletPodResourcesDynamicResources lists prepared claims in the
// pod-resources API.
var gatesActedOn = map[string]bool{
	"PodAndContainerStatsFromCRI":            true,
	"GracefulNodeShutdownBasedOnPodPriority": true,
	gateUserNamespaces:                       true,
	gatePodResourcesGet:                      true,
	gateCPUManagerAlphaOptions:               true,
	gateCPUManagerBetaOptions:                true,
	gateDisableCPUQuotaExclusive:             true,
	gateResizeExclusiveCPUs:                  true,
	gateContainerCheckpoint:                  true,
	gateSystemdWatchdog:                      true,
	gateReloadServingCertFile:                true,
	gateNodeSwap:                             true,
	gateCgroupDriverFromCRI:                  true,
	gateRuntimeClassInImage:                  true,
	gateContainerStopSignals:                 true,
	gateImageVolume:                          true,
	gateDynamicResources:                     true,
	gatePodResourcesDRA:                      true,
}

// The gates nodelet acts on that are read by name.
const (
	gateUserNamespaces           = "UserNamespacesSupport"
	gatePodResourcesGet          = "KubeletPodResourcesGet"
	gateCPUManagerAlphaOptions   = "CPUManagerPolicyAlphaOptions"
	gateCPUManagerBetaOptions    = "CPUManagerPolicyBetaOptions"
	gateDisableCPUQuotaExclusive = "DisableCPUQuotaWithExclusiveCPUs"
	gateResizeExclusiveCPUs      = "InPlacePodVerticalScalingExclusiveCPUs"
	gateContainerCheckpoint      = "ContainerCheckpoint"
	gateSystemdWatchdog          = "SystemdWatchdog"
	gateReloadServingCertFile    = "ReloadKubeletServerCertificateFile"
	gateNodeSwap                 = "NodeSwap"
	gateCgroupDriverFromCRI      = "KubeletCgroupDriverFromCRI"
	gateRuntimeClassInImage      = "RuntimeClassInImageCriApi"
	gateContainerStopSignals     = "ContainerStopSignals"
	gateImageVolume              = "ImageVolume"
	gateDynamicResources         = "DynamicResourceAllocation"
	gatePodResourcesDRA          = "KubeletPodResourcesDynamicResources"
)

// gateOn is the gate's value: featureGates' when it sets it, else upstream's default.
func gateOn(kc *kubeletconfigv1beta1.KubeletConfiguration, gate string) bool {
	if on, set := kc.FeatureGates[gate]; set {
		return on
	}
	return upstreamGates[gate].Default
}

// cpuManagerOptionGates are the gates that allow the CPU manager's policy options by stage.
func cpuManagerOptionGates(kc *kubeletconfigv1beta1.KubeletConfiguration) cmpolicy.CPUOptionGates {
	return cmpolicy.CPUOptionGates{Alpha: gateOn(kc, gateCPUManagerAlphaOptions), Beta: gateOn(kc, gateCPUManagerBetaOptions)}
}

// checkFeatureGates refuses what the upstream kubelet refuses (an unknown gate, a locked one set
// off its default, one that does not exist yet), and a non-default value nodelet does not act on.
func (v *validator) checkFeatureGates(gates map[string]bool) {
	for _, name := range sortedKeys(gates) {
		on := gates[name]
		field := fmt.Sprintf("featureGates[%q]", name)
		spec, known := upstreamGates[name]
		switch {
		case !known:
			v.add(field, "unrecognized feature gate: %s (the upstream kubelet %s does not know it either)", name, upstreamVersion)
		case spec.Locked && on != spec.Default:
			v.add(field, "cannot set feature gate %s to %t, feature is locked to %t", name, on, spec.Default)
		case spec.Stage == "PRE-ALPHA":
			v.add(field, "cannot set feature gate %s to %t, feature is PreAlpha at emulated version %s", name, on, upstreamVersion)
		case on != spec.Default && !gatesActedOn[name]:
			v.add(field, "is not supported by nodelet at %t: nodelet implements only this %s gate's default (%t) behaviour; remove it or set it to %t",
				on, strings.ToLower(spec.Stage), spec.Default, spec.Default)
		}
	}
}

// warnGates logs, as upstream does, that GA and deprecated gates set explicitly will go away.
func warnGates(gates map[string]bool) {
	for _, name := range sortedKeys(gates) {
		switch upstreamGates[name].Stage {
		case "GA":
			klog.InfoS("Setting GA feature gate; it will be removed in a future release", "gate", name, "value", gates[name])
		case "DEPRECATED":
			klog.InfoS("Setting deprecated feature gate; it will be removed in a future release", "gate", name, "value", gates[name])
		}
	}
}

// gatesValue is --feature-gates: key=value pairs separated by commas. The first use replaces
// the default, later uses add to it; the flag's gates win over the configuration's one by one.
type gatesValue struct {
	gates   *map[string]bool
	changed bool
}

func (g *gatesValue) Set(s string) error {
	if !g.changed {
		*g.gates = map[string]bool{}
		g.changed = true
	}
	for _, pair := range strings.Split(s, ",") {
		if pair == "" {
			continue
		}
		name, value, ok := strings.Cut(pair, "=")
		name = strings.TrimSpace(name)
		if !ok {
			return fmt.Errorf("missing bool value for %s", name)
		}
		on, err := strconv.ParseBool(strings.TrimSpace(value))
		if err != nil {
			return fmt.Errorf("invalid value of %s=%s, err: %v", name, strings.TrimSpace(value), err)
		}
		(*g.gates)[name] = on
	}
	return nil
}

func (g *gatesValue) String() string {
	pairs := make([]string, 0, len(*g.gates))
	for _, name := range sortedKeys(*g.gates) {
		pairs = append(pairs, fmt.Sprintf("%s=%t", name, (*g.gates)[name]))
	}
	return strings.Join(pairs, ",")
}

func (g *gatesValue) Type() string { return "mapStringBool" }

// mergeFlagGates puts --feature-gates over the configuration's featureGates, gate by gate, as
// upstream does (a gate only the file sets keeps the file's value).
func mergeFlagGates(kc *kubeletConfig, flagGates map[string]bool) {
	merged := maps.Clone(kc.FeatureGates)
	if merged == nil {
		merged = map[string]bool{}
	}
	maps.Copy(merged, flagGates)
	kc.FeatureGates = merged
}
