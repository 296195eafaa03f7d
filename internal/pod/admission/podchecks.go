package admission

import (
	"fmt"
	"os"
	goruntime "runtime"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/nodelet/nodelet/internal/host/sysctl"
	"github.com/nodelet/nodelet/internal/pod/podfields"
	"github.com/nodelet/nodelet/internal/runtime/runtimefeatures"
)

// Rejection reasons API users match on.
const (
	ReasonPodOSNotSupported     = "PodOSNotSupported"
	ReasonPodOSSelectorMismatch = "PodOSSelectorNodeLabelDoesNotMatch"
	ReasonSysctlForbidden       = "SysctlForbidden"
	ReasonAppArmor              = "AppArmor"
	messageNoAppArmor           = "Cannot enforce AppArmor: AppArmor is not enabled on the host"
)

// appArmorEnabledFile says whether the kernel enforces AppArmor ("Y").
const appArmorEnabledFile = "/sys/module/apparmor/parameters/enabled"

// HostHasAppArmor reports whether the kernel enforces AppArmor.
func HostHasAppArmor() bool {
	data, err := os.ReadFile(appArmorEnabledFile)
	return err == nil && strings.HasPrefix(string(data), "Y")
}

// checkAppArmor refuses a pod that asks for an AppArmor profile (other than unconfined) on a
// host that cannot enforce one: running it unconfined would silently drop its protection.
func checkAppArmor(pod *v1.Pod, hostHasAppArmor bool) (bool, string, string) {
	if hostHasAppArmor || !wantsAppArmor(pod) {
		return true, "", ""
	}
	return false, ReasonAppArmor, messageNoAppArmor
}

// wantsAppArmor reports whether any container of pod asks for an AppArmor profile other than
// unconfined, through the pod or container security context or the older annotations.
func wantsAppArmor(pod *v1.Pod) bool {
	confined := func(p *v1.AppArmorProfile) bool {
		return p != nil && p.Type != v1.AppArmorProfileTypeUnconfined
	}
	if psc := pod.Spec.SecurityContext; psc != nil && confined(psc.AppArmorProfile) {
		return true
	}
	for k, v := range pod.Annotations {
		if strings.HasPrefix(k, v1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix) && v != v1.DeprecatedAppArmorBetaProfileNameUnconfined {
			return true
		}
	}
	for _, list := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range list {
			if c.SecurityContext != nil && confined(c.SecurityContext.AppArmorProfile) {
				return true
			}
		}
	}
	return false
}

// safeSysctls are namespaced, isolated per pod and harmless to the node: any pod may set them.
var safeSysctls = map[string]bool{
	"kernel.shm_rmid_forced":              true,
	"net.ipv4.ip_local_port_range":        true,
	"net.ipv4.tcp_syncookies":             true,
	"net.ipv4.ping_group_range":           true,
	"net.ipv4.ip_unprivileged_port_start": true,
	"net.ipv4.ip_local_reserved_ports":    true,
	"net.ipv4.tcp_keepalive_time":         true,
	"net.ipv4.tcp_fin_timeout":            true,
	"net.ipv4.tcp_keepalive_intvl":        true,
	"net.ipv4.tcp_keepalive_probes":       true,
	"net.ipv4.tcp_rmem":                   true,
	"net.ipv4.tcp_wmem":                   true,
}

// checkAppArmor refuses a pod asking for an AppArmor profile the host cannot enforce.
func (a *Admitter) checkAppArmor(pod *v1.Pod) (bool, string, string) {
	hasAppArmor := HostHasAppArmor
	if a.HostHasAppArmor != nil {
		hasAppArmor = a.HostHasAppArmor
	}
	return checkAppArmor(pod, hasAppArmor())
}

// checkOS refuses pods written for another operating system. As upstream, the selector
// checked is the pod's own kubernetes.io/os label (a nodeSelector on it is the scheduler
// predicates' NodeAffinity), compared with the node's OS: nodelet always labels the node with
// it.
func checkOS(pod *v1.Pod) (bool, string, string) {
	if want, ok := pod.Labels[v1.LabelOSStable]; ok && want != goruntime.GOOS {
		return false, ReasonPodOSSelectorMismatch, "Failed to admit pod as the `" + v1.LabelOSStable + "` label doesn't match node label"
	}
	if pod.Spec.OS != nil && string(pod.Spec.OS.Name) != goruntime.GOOS {
		return false, ReasonPodOSNotSupported, fmt.Sprintf("Failed to admit pod as the OS field doesn't match node OS: pod OS %q, node OS %q", pod.Spec.OS.Name, goruntime.GOOS)
	}
	return true, "", ""
}

// checkSysctls allows the safe sysctls and the unsafe ones the node allows (allowed entries
// may end in "*"), as long as each lives in a namespace the pod does not share with the host:
// a safe sysctl in the host's network or IPC namespace would set the node's own value (and the
// runtime refuses it only once the sandbox is being made).
func checkSysctls(pod *v1.Pod, allowedUnsafe []string) (bool, string, string) {
	if pod.Spec.SecurityContext == nil {
		return true, "", ""
	}
	for _, s := range pod.Spec.SecurityContext.Sysctls {
		name := sysctl.Normalize(s.Name)
		if !safeSysctls[name] && !matchesAny(name, allowedUnsafe) {
			return false, ReasonSysctlForbidden, fmt.Sprintf("forbidden sysctl: %q not allowlisted", name)
		}
		if msg := sharedNamespace(pod, name); msg != "" {
			return false, ReasonSysctlForbidden, msg
		}
	}
	return true, "", ""
}

func matchesAny(name string, patterns []string) bool {
	for _, p := range patterns {
		if p == name || (strings.HasSuffix(p, "*") && strings.HasPrefix(name, strings.TrimSuffix(p, "*"))) {
			return true
		}
	}
	return false
}

// sharedNamespace says why a sysctl cannot be set: it is not namespaced, or the pod shares
// that namespace (network, or IPC for kernel.shm*, kernel.msg*, kernel.sem and fs.mqueue.*)
// with the host.
func sharedNamespace(pod *v1.Pod, name string) string {
	switch {
	case strings.HasPrefix(name, "net."):
		if pod.Spec.HostNetwork {
			return fmt.Sprintf("forbidden sysctl: %q cannot be set in a pod that uses the host network namespace (hostNetwork)", name)
		}
	case name == "kernel.sem" || strings.HasPrefix(name, "kernel.shm") || strings.HasPrefix(name, "kernel.msg") || strings.HasPrefix(name, "fs.mqueue."):
		if pod.Spec.HostIPC {
			return fmt.Sprintf("forbidden sysctl: %q cannot be set in a pod that uses the host IPC namespace (hostIPC)", name)
		}
	default:
		return fmt.Sprintf("forbidden sysctl: %q is not namespaced and cannot be set per pod", name)
	}
	return ""
}

// ReasonSupplementalGroupsPolicyNotSupported refuses supplementalGroupsPolicy Strict on a
// runtime that does not report it, as upstream.
const ReasonSupplementalGroupsPolicyNotSupported = "SupplementalGroupsPolicyNotSupported"

// checkSupplementalGroupsPolicy refuses supplementalGroupsPolicy Strict unless the runtime
// reports it can apply it: merged groups would silently give the pod the image's groups.
func checkSupplementalGroupsPolicy(pod *v1.Pod, features RuntimeFeatures) (bool, string, string) {
	psc := pod.Spec.SecurityContext
	if psc == nil || psc.SupplementalGroupsPolicy == nil || *psc.SupplementalGroupsPolicy != v1.SupplementalGroupsPolicyStrict {
		return true, "", ""
	}
	if features != nil && features.SupplementalGroupsPolicy() {
		return true, "", ""
	}
	msg := fmt.Sprintf("SupplementalGroupsPolicy=%s is not supported in this node", v1.SupplementalGroupsPolicyStrict)
	if features != nil { // upstream's message, then which runtime would lift it
		msg += " (" + features.Lacking(runtimefeatures.SupplementalGroupsPolicySince) + ")"
	}
	return false, ReasonSupplementalGroupsPolicyNotSupported, msg
}

// checkImageVolumes refuses, with the gate on, a pod with an image volume the runtime would
// not mount: upstream sends the mount anyway and a runtime that ignores CRI's Mount.image
// (containerd before 2.1) gives the container an empty directory instead of the image.
func (a *Admitter) checkImageVolumes(pod *v1.Pod) (bool, string, string) {
	if !a.ImageVolumes {
		return true, "", ""
	}
	for i, vol := range pod.Spec.Volumes {
		if vol.Image == nil || a.RuntimeFeatures != nil && a.RuntimeFeatures.ImageVolumes() {
			continue
		}
		why := "image volumes need a runtime that mounts images through CRI"
		if a.RuntimeFeatures != nil {
			why = a.RuntimeFeatures.ImageVolumesRefusal()
		}
		return false, podfields.Reason, fmt.Sprintf("spec.volumes[%d].image: %s", i, why)
	}
	return true, "", ""
}
