package containeropts

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/nodelet/nodelet/internal/lib/atomicfile"
)

// EtcHosts writes the /etc/hosts file all of a pod's containers mount.
type EtcHosts struct {
	PodsDir       string // RootDir/pods: a pod's file is PodsDir/<uid>/etc-hosts
	NodeHostsFile string // the node's hosts file, the base of host-network pods' file
	ClusterDomain string // for the pod's FQDN when it has a subdomain
}

// PodHostname is spec.hostname or the pod name, cut to a DNS label; host-network pods keep
// the node's hostname.
func PodHostname(pod *v1.Pod) (string, error) {
	if pod.Spec.HostNetwork {
		return os.Hostname()
	}
	name := pod.Spec.Hostname
	if name == "" {
		name = pod.Name
	}
	if len(name) > 63 {
		name = strings.TrimRight(name[:63], "-.")
	}
	return name, nil
}

// File is where the pod's hosts file is kept.
func (h EtcHosts) File(pod *v1.Pod) string {
	return filepath.Join(h.PodsDir, string(pod.UID), "etc-hosts")
}

// Ensure returns the pod's hosts file, writing it only if this sandbox has none yet:
// a restarted container gets the file its predecessors saw, with whatever they edited in it.
// A new sandbox (new IPs) drops the file first (Forget).
func (h EtcHosts) Ensure(pod *v1.Pod, podIPs []string) (string, error) {
	path := h.File(pod)
	if fi, err := os.Lstat(path); err == nil && fi.Mode().IsRegular() {
		return path, nil
	}
	return path, h.write(pod, podIPs)
}

// Forget removes the hosts file of the pod's previous sandbox, whose IPs it names.
func (h EtcHosts) Forget(pod *v1.Pod) error {
	if err := os.Remove(h.File(pod)); err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("remove the previous sandbox's hosts file: %w", err)
	}
	return nil
}

// write writes the pod's hosts file. A host-network pod sees the node's own file with
// spec.hostAliases appended; any other pod gets a managed file: localhost entries, the pod's
// own name on its IPs, then spec.hostAliases.
func (h EtcHosts) write(pod *v1.Pod, podIPs []string) error {
	content, err := h.Content(pod, podIPs)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(h.File(pod)), 0o750); err != nil {
		return err
	}
	if err := atomicfile.WriteFile(h.File(pod), []byte(content), 0o644); err != nil {
		return fmt.Errorf("write hosts file: %w", err)
	}
	return nil
}

// Content is the pod's hosts file as write writes it.
func (h EtcHosts) Content(pod *v1.Pod, podIPs []string) (string, error) {
	if pod.Spec.HostNetwork {
		node, err := os.ReadFile(h.NodeHostsFile)
		if err != nil {
			return "", fmt.Errorf("read the node's hosts file: %w", err)
		}
		var b strings.Builder
		b.Write(node)
		if len(pod.Spec.HostAliases) > 0 {
			b.WriteString("\n# Entries added by HostAliases.\n")
			if err := writeHostAliases(&b, pod.Spec.HostAliases); err != nil {
				return "", err
			}
		}
		return b.String(), nil
	}
	hostname, _ := PodHostname(pod)
	names := hostname
	if pod.Spec.Subdomain != "" {
		fqdn := fmt.Sprintf("%s.%s.%s.svc.%s", hostname, pod.Spec.Subdomain, pod.Namespace, h.ClusterDomain)
		names = fqdn + "\t" + hostname
	}
	var b strings.Builder
	// Tools (and the conformance suite) recognise a managed file by this exact first line.
	b.WriteString("# Kubernetes-managed hosts file.\n")
	b.WriteString("127.0.0.1\tlocalhost\n")
	b.WriteString("::1\tlocalhost ip6-localhost ip6-loopback\n")
	b.WriteString("fe00::0\tip6-localnet\nfe00::0\tip6-mcastprefix\nfe00::1\tip6-allnodes\nfe00::2\tip6-allrouters\n")
	for _, ip := range podIPs {
		fmt.Fprintf(&b, "%s\t%s\n", ip, names)
	}
	if err := writeHostAliases(&b, pod.Spec.HostAliases); err != nil {
		return "", err
	}
	return b.String(), nil
}

// writeHostAliases appends one line per alias. The manifest sources validate hostAliases; this
// refuses anything that is not an IP or a DNS name all the same, so that no alias can add a
// line or a comment of its own to the file.
func writeHostAliases(b *strings.Builder, aliases []v1.HostAlias) error {
	for i, alias := range aliases {
		if net.ParseIP(alias.IP) == nil {
			return fmt.Errorf("spec.hostAliases[%d].ip %q is not an IP address: fix the pod's hostAliases", i, alias.IP)
		}
		for j, h := range alias.Hostnames {
			if errs := validation.IsDNS1123Subdomain(h); len(errs) > 0 {
				return fmt.Errorf("spec.hostAliases[%d].hostnames[%d] %q is not a valid hostname (%s): fix the pod's hostAliases",
					i, j, h, strings.Join(errs, "; "))
			}
		}
		fmt.Fprintf(b, "%s\t%s\n", alias.IP, strings.Join(alias.Hostnames, "\t"))
	}
	return nil
}
