package containeropts

import (
	"path/filepath"
	"strings"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// The /proc and /sys paths an unprivileged container with the default procMount must not read
// (masked) or change (read-only): the runtime applies exactly the lists it is given.
var (
	defaultMaskedPaths = []string{
		"/proc/asound", "/proc/acpi", "/proc/kcore", "/proc/keys", "/proc/latency_stats", "/proc/timer_list",
		"/proc/timer_stats", "/proc/sched_debug", "/proc/scsi", "/sys/firmware", "/sys/devices/virtual/powercap",
	}
	defaultReadonlyPaths = []string{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"}
)

// Seccomp maps API seccomp profiles to the CRI's.
type Seccomp struct {
	RootDir        string // holds localhost profiles under seccomp/
	RuntimeDefault bool   // seccompDefault: no profile means RuntimeDefault, not Unconfined
}

// ContainerSecurity maps the container's security context over the pod's.
func ContainerSecurity(pod *v1.Pod, c *v1.Container, seccomp Seccomp) *runtimeapi.LinuxContainerSecurityContext {
	sc := &runtimeapi.LinuxContainerSecurityContext{
		NamespaceOptions:   NamespaceOptions(pod),
		SupplementalGroups: SupplementalGroups(pod.Spec.SecurityContext),
	}
	psc := pod.Spec.SecurityContext
	if psc == nil {
		psc = &v1.PodSecurityContext{}
	}
	csc := c.SecurityContext
	if csc == nil {
		csc = &v1.SecurityContext{}
	}
	if uid := firstSet(csc.RunAsUser, psc.RunAsUser); uid != nil {
		sc.RunAsUser = &runtimeapi.Int64Value{Value: *uid}
	}
	if gid := firstSet(csc.RunAsGroup, psc.RunAsGroup); gid != nil {
		sc.RunAsGroup = &runtimeapi.Int64Value{Value: *gid}
	}
	if se := csc.SELinuxOptions; se != nil || psc.SELinuxOptions != nil {
		if se == nil {
			se = psc.SELinuxOptions
		}
		sc.SelinuxOptions = &runtimeapi.SELinuxOption{User: se.User, Role: se.Role, Type: se.Type, Level: se.Level}
	}
	sc.Privileged = isTrue(csc.Privileged)
	sc.ReadonlyRootfs = isTrue(csc.ReadOnlyRootFilesystem)
	if csc.AllowPrivilegeEscalation != nil {
		sc.NoNewPrivs = !*csc.AllowPrivilegeEscalation
	}
	if caps := csc.Capabilities; caps != nil {
		sc.Capabilities = &runtimeapi.Capability{}
		for _, c := range caps.Add {
			sc.Capabilities.AddCapabilities = append(sc.Capabilities.AddCapabilities, string(c))
		}
		for _, c := range caps.Drop {
			sc.Capabilities.DropCapabilities = append(sc.Capabilities.DropCapabilities, string(c))
		}
	}
	sc.MaskedPaths, sc.ReadonlyPaths = procPaths(sc.Privileged, csc.ProcMount)
	sc.Seccomp = seccomp.Profile(firstSeccomp(csc.SeccompProfile, psc.SeccompProfile))
	sc.Apparmor = appArmorProfile(pod, c.Name, csc.AppArmorProfile, psc.AppArmorProfile)
	return sc
}

// procPaths: a privileged container or an Unmasked procMount sees all of /proc (non-nil empty
// lists, so the runtime adds none of its own); every other container gets the default lists.
func procPaths(privileged bool, procMount *v1.ProcMountType) (masked, readonly []string) {
	if privileged || (procMount != nil && *procMount == v1.UnmaskedProcMount) {
		return []string{}, []string{}
	}
	return append([]string(nil), defaultMaskedPaths...), append([]string(nil), defaultReadonlyPaths...)
}

func firstSet(values ...*int64) *int64 {
	for _, v := range values {
		if v != nil {
			return v
		}
	}
	return nil
}

func firstSeccomp(profiles ...*v1.SeccompProfile) *v1.SeccompProfile {
	for _, p := range profiles {
		if p != nil {
			return p
		}
	}
	return nil
}

// profile maps an API profile to the CRI's; none means Unconfined, or RuntimeDefault with
// seccompDefault on, as upstream.
func (s Seccomp) Profile(p *v1.SeccompProfile) *runtimeapi.SecurityProfile {
	if p == nil && s.RuntimeDefault {
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault}
	}
	if p == nil {
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Unconfined}
	}
	switch p.Type {
	case v1.SeccompProfileTypeRuntimeDefault:
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault}
	case v1.SeccompProfileTypeLocalhost:
		ref := ""
		if p.LocalhostProfile != nil {
			ref = filepath.Join(s.RootDir, "seccomp", *p.LocalhostProfile)
		}
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Localhost, LocalhostRef: ref}
	}
	return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Unconfined}
}

// appArmorProfile picks the container's field, then the pod's, then the older per-container
// annotation; nil leaves the runtime's default.
func appArmorProfile(pod *v1.Pod, name string, profiles ...*v1.AppArmorProfile) *runtimeapi.SecurityProfile {
	for _, p := range profiles {
		if p == nil {
			continue
		}
		switch p.Type {
		case v1.AppArmorProfileTypeRuntimeDefault:
			return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault}
		case v1.AppArmorProfileTypeUnconfined:
			return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Unconfined}
		case v1.AppArmorProfileTypeLocalhost:
			ref := ""
			if p.LocalhostProfile != nil {
				ref = *p.LocalhostProfile
			}
			return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Localhost, LocalhostRef: ref}
		}
	}
	switch a := pod.Annotations[v1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix+name]; {
	case a == v1.DeprecatedAppArmorBetaProfileRuntimeDefault:
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault}
	case a == v1.DeprecatedAppArmorBetaProfileNameUnconfined:
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Unconfined}
	case strings.HasPrefix(a, v1.DeprecatedAppArmorBetaProfileNamePrefix):
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Localhost,
			LocalhostRef: strings.TrimPrefix(a, v1.DeprecatedAppArmorBetaProfileNamePrefix)}
	}
	return nil
}

// RunAsNonRoot reports whether the container must not run as uid 0.
func RunAsNonRoot(pod *v1.Pod, c *v1.Container) bool {
	if c.SecurityContext != nil && c.SecurityContext.RunAsNonRoot != nil {
		return *c.SecurityContext.RunAsNonRoot
	}
	return pod.Spec.SecurityContext != nil && isTrue(pod.Spec.SecurityContext.RunAsNonRoot)
}

// NamespaceOptions maps hostNetwork/hostPID/hostIPC and shareProcessNamespace to CRI modes.
func NamespaceOptions(pod *v1.Pod) *runtimeapi.NamespaceOption {
	ns := &runtimeapi.NamespaceOption{
		Network: runtimeapi.NamespaceMode_POD,
		Pid:     runtimeapi.NamespaceMode_CONTAINER,
		Ipc:     runtimeapi.NamespaceMode_POD,
	}
	if pod.Spec.HostNetwork {
		ns.Network = runtimeapi.NamespaceMode_NODE
	}
	if pod.Spec.ShareProcessNamespace != nil && *pod.Spec.ShareProcessNamespace {
		ns.Pid = runtimeapi.NamespaceMode_POD
	}
	if pod.Spec.HostPID {
		ns.Pid = runtimeapi.NamespaceMode_NODE
	}
	if pod.Spec.HostIPC {
		ns.Ipc = runtimeapi.NamespaceMode_NODE
	}
	return ns
}

func SupplementalGroups(psc *v1.PodSecurityContext) []int64 {
	if psc == nil {
		return nil
	}
	groups := append([]int64(nil), psc.SupplementalGroups...)
	if psc.FSGroup != nil {
		groups = append(groups, *psc.FSGroup)
	}
	return groups
}
