package config

import (
	"fmt"
	"strings"

	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"

	"github.com/nodelet/nodelet/internal/cm/cpumanager"
)

// gatesLike are the upstream feature gates nodelet accepts, each with the values it accepts;
// any other gate is refused. Some it already behaves like: pod and container stats always
// come from the runtime, imageMaximumGCAge is always honoured, graceful node shutdown is
// always there (by priority only when shutdownGracePeriodByPodPriority is set), pods always
// get the PodReadyToStartContainers condition. The others it acts on in both values, as
// upstream 1.33 does (defaults in gateDefaults): UserNamespacesSupport=false refuses pods that
// set hostUsers; KubeletPodResourcesGet turns the pod-resources API's Get on;
// CPUManagerPolicyAlphaOptions and CPUManagerPolicyBetaOptions allow the CPU manager's options
// of those stages; DisableCPUQuotaWithExclusiveCPUs runs containers with exclusive CPUs (and
// their pods' cgroups) without a CFS quota; InPlacePodVerticalScalingExclusiveCPUs lets
// Guaranteed pods be resized in place beside the static CPU and memory manager policies;
// ContainerCheckpoint serves POST /checkpoint; SystemdWatchdog feeds a unit's WatchdogSec;
// ReloadKubeletServerCertificateFile serves tlsCertFile/tlsPrivateKeyFile anew when they change.
// NodeSwap=false keeps every container off swap and refuses memorySwap.swapBehavior;
// KubeletCgroupDriverFromCRI takes the cgroup driver the runtime reports over cgroupDriver;
// RuntimeClassInImageCriAPI names the pod's runtime handler in its image pulls.
var gatesLike = map[string][]bool{
	"PodAndContainerStatsFromCRI":            {true, false},
	"ImageMaximumGCAge":                      {true},
	"GracefulNodeShutdown":                   {true},
	"GracefulNodeShutdownBasedOnPodPriority": {true, false},
	"PodReadyToStartContainersCondition":     {true},
	"UserNamespacesSupport":                  {true, false},
	"KubeletPodResourcesGet":                 {true, false},
	gateCPUManagerAlphaOptions:               {true, false},
	gateCPUManagerBetaOptions:                {true, false},
	gateDisableCPUQuotaExclusive:             {true, false},
	gateResizeExclusiveCPUs:                  {true, false},
	gateContainerCheckpoint:                  {true, false},
	gateSystemdWatchdog:                      {true, false},
	gateReloadServingCertFile:                {true, false},
}

// The gates nodelet acts on that need a default of their own.
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
	gateRuntimeClassInImage      = "RuntimeClassInImageCriAPI"
)

// gateDefaults are upstream 1.33's defaults of the gates nodelet acts on.
var gateDefaults = map[string]bool{
	gateUserNamespaces:           true,
	gatePodResourcesGet:          false,
	gateCPUManagerAlphaOptions:   false,
	gateCPUManagerBetaOptions:    true,
	gateDisableCPUQuotaExclusive: true,
	gateResizeExclusiveCPUs:      false,
	gateContainerCheckpoint:      true,
	gateSystemdWatchdog:          true,
	gateReloadServingCertFile:    true,
	gateNodeSwap:                 true,
	gateCgroupDriverFromCRI:      true,
	gateRuntimeClassInImage:      false,
}

// gateOn is the gate's value: featureGates' when it sets it, else upstream's default.
func gateOn(kc *kubeletconfigv1beta1.KubeletConfiguration, gate string) bool {
	if on, set := kc.FeatureGates[gate]; set {
		return on
	}
	return gateDefaults[gate]
}

// cpuManagerOptionGates are the gates that allow the CPU manager's policy options by stage.
func cpuManagerOptionGates(kc *kubeletconfigv1beta1.KubeletConfiguration) cpumanager.OptionGates {
	return cpumanager.OptionGates{Alpha: gateOn(kc, gateCPUManagerAlphaOptions), Beta: gateOn(kc, gateCPUManagerBetaOptions)}
}

func gatesDescription() string {
	var parts []string
	for _, gate := range sortedKeys(gatesLike) {
		for _, on := range gatesLike[gate] {
			parts = append(parts, fmt.Sprintf("%s=%v", gate, on))
		}
	}
	return strings.Join(parts, ", ")
}
