package node

import (
	"fmt"
	"net"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// podPlumbing names interfaces that carry pod traffic rather than the host's own address.
var podPlumbing = []string{"nodelet", "cni", "veth", "docker", "br-", "flannel", "cali", "kube-", "virbr"}

// addresses are the node's InternalIP(s) and its Hostname. nodeIPs (--node-ip) win; otherwise
// the host's primary address is used.
func addresses(nodeIPs []string, hostname string, primary func() (net.IP, error)) ([]v1.NodeAddress, error) {
	var out []v1.NodeAddress
	for _, s := range nodeIPs {
		ip := net.ParseIP(strings.TrimSpace(s))
		if ip == nil {
			return nil, fmt.Errorf("--node-ip %q is not an IP address", s)
		}
		out = append(out, v1.NodeAddress{Type: v1.NodeInternalIP, Address: ip.String()})
	}
	if len(out) == 0 {
		ip, err := primary()
		if err != nil {
			return nil, err
		}
		out = append(out, v1.NodeAddress{Type: v1.NodeInternalIP, Address: ip.String()})
	}
	return append(out, v1.NodeAddress{Type: v1.NodeHostName, Address: hostname}), nil
}

// primaryHostIP is the first global unicast address of an up, non-loopback interface that is
// not pod plumbing, IPv4 preferred.
func primaryHostIP() (net.IP, error) {
	ifaces, err := net.Interfaces()
	if err != nil {
		return nil, fmt.Errorf("listing interfaces: %w", err)
	}
	var v6 net.IP
	for _, iface := range ifaces {
		if iface.Flags&net.FlagUp == 0 || iface.Flags&net.FlagLoopback != 0 || isPodPlumbing(iface.Name) {
			continue
		}
		addrs, err := iface.Addrs()
		if err != nil {
			continue
		}
		for _, a := range addrs {
			ipn, ok := a.(*net.IPNet)
			if !ok || !ipn.IP.IsGlobalUnicast() {
				continue
			}
			if ipn.IP.To4() != nil {
				return ipn.IP.To4(), nil
			}
			if v6 == nil {
				v6 = ipn.IP
			}
		}
	}
	if v6 != nil {
		return v6, nil
	}
	return nil, fmt.Errorf("no global unicast address on any host interface; set --node-ip")
}

func isPodPlumbing(name string) bool {
	for _, p := range podPlumbing {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}
