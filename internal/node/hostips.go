package node

import "strings"

// HostIPs are the node's IPs as pods and the API see them: --node-ip (comma-separated) when
// set, else the host's primary address (see primaryHostIP); none when it has no usable one.
func HostIPs(nodeIP string) []string {
	if nodeIP != "" {
		return strings.Split(nodeIP, ",")
	}
	ip, err := primaryHostIP()
	if err != nil {
		return nil
	}
	return []string{ip.String()}
}

// PrimaryHostIP is the first of HostIPs, or "" when there is none.
func PrimaryHostIP(nodeIP string) string {
	if ips := HostIPs(nodeIP); len(ips) > 0 {
		return ips[0]
	}
	return ""
}
