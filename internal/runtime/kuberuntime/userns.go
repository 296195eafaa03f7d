package kuberuntime

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/internal/runtime/container"
	"github.com/nodelet/nodelet/internal/runtime/runtimefeatures"
	"github.com/nodelet/nodelet/internal/runtime/userns"
)

// PodIDRanges gives pods with hostUsers: false their range of host IDs (*userns.Manager).
type PodIDRanges interface {
	// Mapping returns the pod's range, the same one for the pod's whole life.
	Mapping(uid types.UID) (userns.Range, error)
}

// featuresReport is what a CRI Status answer says the runtime can do.
func featuresReport(resp *runtimeapi.StatusResponse) runtimefeatures.Report {
	r := runtimefeatures.Report{Features: resp.GetFeatures() != nil, SupplementalGroupsPolicy: resp.GetFeatures().GetSupplementalGroupsPolicy()}
	for _, h := range resp.GetRuntimeHandlers() {
		r.Handlers = append(r.Handlers, runtimefeatures.Handler{
			Name:                    h.GetName(),
			UserNamespaces:          h.GetFeatures().GetUserNamespaces(),
			RecursiveReadOnlyMounts: h.GetFeatures().GetRecursiveReadOnlyMounts(),
		})
	}
	return r
}

// podUserNamespace is the sandbox's user namespace option: the node's for hostUsers unset or
// true; for hostUsers: false, the pod's own range mapped from container ID 0, when the pod's
// runtime handler supports user namespaces. Otherwise the sandbox is refused with upstream's
// message rather than run with the host's IDs.
func (m *Manager) podUserNamespace(pod *v1.Pod) (*runtimeapi.UserNamespace, error) {
	if m.usernsOff {
		if pod.Spec.HostUsers == nil {
			return nil, nil
		}
		return nil, fmt.Errorf("the feature gate %q is disabled: can't set spec.HostUsers", "UserNamespacesSupport")
	}
	if pod.Spec.HostUsers == nil || *pod.Spec.HostUsers {
		return &runtimeapi.UserNamespace{Mode: runtimeapi.NamespaceMode_NODE}, nil
	}
	handler, err := m.handler(pod)
	if err != nil {
		return nil, err
	}
	if supported, err := m.features.UserNamespaces(handler); err != nil || !supported {
		// Upstream's message, then which runtime would lift it.
		msg := "can't set `spec.hostUsers: false`, runtime does not support user namespaces (" +
			m.features.Lacking(runtimefeatures.UserNamespacesSince) + ")"
		if handler != "" {
			msg = fmt.Sprintf("can't set `spec.hostUsers: false`, RuntimeClass handler %q does not support user namespaces", handler)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", msg, err)
		}
		return nil, fmt.Errorf("%s", msg)
	}
	if m.idRanges == nil {
		return nil, fmt.Errorf("can't set `spec.hostUsers: false`: nodelet runs without a user namespace manager")
	}
	r, err := m.idRanges.Mapping(pod.UID)
	if err != nil {
		return nil, err
	}
	ids := []*runtimeapi.IDMapping{{HostId: r.First, ContainerId: 0, Length: r.Length}}
	return &runtimeapi.UserNamespace{Mode: runtimeapi.NamespaceMode_POD, Uids: ids, Gids: ids}, nil
}

// useSandboxUserNamespace puts the container in its sandbox's user namespace and, when that is
// the pod's own, gives every mount the same ID mapping (idmapped mounts), so that files the
// host sees as the pod's range are the container's own IDs, as upstream.
func useSandboxUserNamespace(cfg *runtimeapi.ContainerConfig, sb *sandboxInfo) {
	userNS := sb.config.GetLinux().GetSecurityContext().GetNamespaceOptions().GetUsernsOptions()
	sc := cfg.GetLinux().GetSecurityContext()
	if userNS == nil || sc == nil || sc.NamespaceOptions == nil {
		return
	}
	sc.NamespaceOptions.UsernsOptions = userNS
	if userNS.Mode != runtimeapi.NamespaceMode_POD {
		return
	}
	for _, mnt := range cfg.Mounts {
		mnt.UidMappings, mnt.GidMappings = userNS.Uids, userNS.Gids
	}
}

// supportsRecursiveReadOnly says whether the pod's runtime handler reports recursive read-only
// mounts; a handler that cannot be looked up does not.
func (m *Manager) supportsRecursiveReadOnly(pod *v1.Pod) bool {
	handler, err := m.handler(pod)
	if err != nil {
		klog.ErrorS(err, "Failed to look up the runtime handler", "pod", klog.KObj(pod))
		return false
	}
	return m.features.RecursiveReadOnlyMounts(handler)
}

// supplementalGroupsPolicy maps the pod's policy to CRI's; unset is Merge. An unknown value
// is an error rather than silently merged.
func supplementalGroupsPolicy(psc *v1.PodSecurityContext) (runtimeapi.SupplementalGroupsPolicy, error) {
	if psc == nil || psc.SupplementalGroupsPolicy == nil {
		return runtimeapi.SupplementalGroupsPolicy_Merge, nil
	}
	v, ok := runtimeapi.SupplementalGroupsPolicy_value[string(*psc.SupplementalGroupsPolicy)]
	if !ok {
		return 0, fmt.Errorf("unsupported supplementalGroupsPolicy: %s", *psc.SupplementalGroupsPolicy)
	}
	return runtimeapi.SupplementalGroupsPolicy(v), nil
}

// containerUser is the identity the runtime reports the container started with, nil when it
// reports none (containerd 1.6).
func containerUser(st *runtimeapi.ContainerStatus) *container.ContainerUser {
	linux := st.GetUser().GetLinux()
	if linux == nil {
		return nil
	}
	return &container.ContainerUser{UID: linux.Uid, GID: linux.Gid, SupplementalGroups: append([]int64(nil), linux.SupplementalGroups...)}
}

// sandboxUserAndGroups sets the sandbox's user namespace and supplementalGroupsPolicy.
func (m *Manager) sandboxUserAndGroups(pod *v1.Pod, sc *runtimeapi.LinuxSandboxSecurityContext) error {
	userNS, err := m.podUserNamespace(pod)
	if err != nil {
		return err
	}
	sc.NamespaceOptions.UsernsOptions = userNS
	sc.SupplementalGroupsPolicy, err = supplementalGroupsPolicy(pod.Spec.SecurityContext)
	return err
}
