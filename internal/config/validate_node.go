package config

import (
	"net"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// nodeIPs checks --node-ip: one IP, or an IPv4 and an IPv6 address for a
// dual-stack node.
func (v *validator) nodeIPs(value string) {
	if value == "" {
		return
	}
	parts := strings.Split(value, ",")
	if len(parts) > 2 {
		v.add("--node-ip", "at most two addresses (one IPv4, one IPv6), got %q", value)
		return
	}
	var families []bool
	for _, part := range parts {
		ip := net.ParseIP(strings.TrimSpace(part))
		if ip == nil {
			v.add("--node-ip", "must be an IP address, got %q", part)
			return
		}
		families = append(families, ip.To4() != nil)
	}
	if len(families) == 2 && families[0] == families[1] {
		v.add("--node-ip", "two addresses must be one IPv4 and one IPv6, got %q", value)
	}
}

// Label keys in the kubernetes.io and k8s.io namespaces that a node may set
// on itself; the rest of those namespaces is reserved for the control plane.
var (
	selfSetLabels = []string{
		"kubernetes.io/hostname",
		"kubernetes.io/arch",
		"kubernetes.io/os",
		"beta.kubernetes.io/arch",
		"beta.kubernetes.io/os",
		"beta.kubernetes.io/instance-type",
		"node.kubernetes.io/instance-type",
		"failure-domain.beta.kubernetes.io/region",
		"failure-domain.beta.kubernetes.io/zone",
		"topology.kubernetes.io/region",
		"topology.kubernetes.io/zone",
	}
	selfSetLabelNamespaces = []string{"kubelet.kubernetes.io", "node.kubernetes.io"}
)

// nodeLabels checks --node-labels: well-formed keys and values, and no keys
// in namespaces the node may not label itself with.
func (v *validator) nodeLabels(labels map[string]string) {
	for _, key := range sortedKeys(labels) {
		for _, msg := range validation.IsQualifiedName(key) {
			v.add("--node-labels", "key %q: %s", key, msg)
		}
		for _, msg := range validation.IsValidLabelValue(labels[key]) {
			v.add("--node-labels", "value %q of %q: %s", labels[key], key, msg)
		}
		if !nodeMaySetLabel(key) {
			v.add("--node-labels", "key %q is in a namespace reserved for the control plane", key)
		}
	}
}

func nodeMaySetLabel(key string) bool {
	namespace, _, found := strings.Cut(key, "/")
	if !found {
		return true
	}
	if !inDomain(namespace, "kubernetes.io") && !inDomain(namespace, "k8s.io") {
		return true
	}
	if slices.Contains(selfSetLabels, key) {
		return true
	}
	for _, allowed := range selfSetLabelNamespaces {
		if inDomain(namespace, allowed) {
			return true
		}
	}
	return false
}

// inDomain reports whether name is domain or one of its subdomains.
func inDomain(name, domain string) bool {
	return name == domain || strings.HasSuffix(name, "."+domain)
}
