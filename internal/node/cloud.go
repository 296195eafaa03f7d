package node

import (
	"net"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// With --cloud-provider=external the cloud controller manager finishes the Node: until it
// has, the Node carries TaintExternalCloudProvider so no pod lands on it, and the addresses it
// sets are the node's (the kubelet only fills them in while there are none).
const (
	TaintExternalCloudProvider = "node.cloudprovider.kubernetes.io/uninitialized"
	// AnnotationProvidedNodeIP passes --node-ip to the cloud controller manager, which picks
	// the cloud's addresses matching it.
	AnnotationProvidedNodeIP = "alpha.kubernetes.io/provided-node-ip"
)

// cloudTaint is the taint a Node registered for an external cloud provider starts with.
func cloudTaint() v1.Taint {
	return v1.Taint{Key: TaintExternalCloudProvider, Value: "true", Effect: v1.TaintEffectNoSchedule}
}

// providedNodeIP is the provided-node-ip annotation's value: --node-ip's addresses (one, or a
// dual-stack pair) joined by a comma, "" when --node-ip is unset or the unspecified address.
func (o Options) providedNodeIP() string {
	var ips []string
	for _, s := range o.NodeIPs {
		ip := net.ParseIP(strings.TrimSpace(s))
		if ip == nil || ip.IsUnspecified() {
			return ""
		}
		ips = append(ips, ip.String())
	}
	return strings.Join(ips, ",")
}

// cloudAddresses reports whether the status must keep the addresses it has (the cloud
// controller manager's) and, when it has none and --node-ip is unset, the Hostname alone, as
// the upstream kubelet does with an external cloud provider.
func (c *Controller) cloudAddresses(n *v1.Node) (keep bool, addrs []v1.NodeAddress) {
	if !c.opts.ExternalCloudProvider {
		return false, nil
	}
	if len(n.Status.Addresses) > 0 {
		return true, nil
	}
	if len(c.opts.NodeIPs) == 0 {
		return true, []v1.NodeAddress{{Type: v1.NodeHostName, Address: c.opts.Hostname}}
	}
	return false, nil
}
