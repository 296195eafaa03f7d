package app

import (
	"net"
	"strings"
)

// virtualPrefixes name interfaces that are pod plumbing, not the host's own address.
var virtualPrefixes = []string{"nodelet", "cni", "veth", "docker", "br-", "flannel", "cali", "kube-"}

// hostIPs returns --node-ip when set, else the first global unicast address of a real interface.
func hostIPs(nodeIP string) []string {
	if nodeIP != "" {
		return strings.Split(nodeIP, ",")
	}
	ifaces, err := net.Interfaces()
	if err != nil {
		return nil
	}
	var v6 string
	for _, iface := range ifaces {
		if iface.Flags&net.FlagUp == 0 || iface.Flags&net.FlagLoopback != 0 || isVirtual(iface.Name) {
			continue
		}
		addrs, _ := iface.Addrs()
		for _, a := range addrs {
			ipn, ok := a.(*net.IPNet)
			if !ok || !ipn.IP.IsGlobalUnicast() {
				continue
			}
			if ipn.IP.To4() != nil {
				return []string{ipn.IP.String()}
			}
			if v6 == "" {
				v6 = ipn.IP.String()
			}
		}
	}
	if v6 != "" {
		return []string{v6}
	}
	return nil
}

func isVirtual(name string) bool {
	for _, p := range virtualPrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}
