package kuberuntime

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodelet/nodelet/internal/host/sysctl"
	"github.com/nodelet/nodelet/internal/lib/metrics"
	"github.com/nodelet/nodelet/internal/podspec/timeline"
	"github.com/nodelet/nodelet/internal/runtime/container"
	"github.com/nodelet/nodelet/internal/runtime/containeropts"
)

// sandboxConfig builds the CRI config of pod's sandbox for attempt, then applies the sandbox
// hooks (which make the pod's cgroup and name it as the cgroup parent).
func (m *Manager) sandboxConfig(ctx context.Context, pod *v1.Pod, attempt uint32) (*runtimeapi.PodSandboxConfig, error) {
	cfg, err := m.baseSandboxConfig(pod, attempt)
	if err != nil {
		return nil, err
	}
	if err := m.hooks.ApplySandbox(ctx, pod, cfg); err != nil {
		return nil, err
	}
	return cfg, nil
}

// baseSandboxConfig is the sandbox's config from the pod spec alone, without the hooks: what
// a pull ahead of the sandbox carries, before any of the pod's resources are made.
func (m *Manager) baseSandboxConfig(pod *v1.Pod, attempt uint32) (*runtimeapi.PodSandboxConfig, error) {
	dnsCfg, err := m.dns.PodDNSConfig(pod)
	if err != nil {
		return nil, err
	}
	hostname, err := containeropts.PodHostname(pod)
	if err != nil {
		return nil, err
	}
	if hostname, err = m.fqdnHostname(pod, hostname); err != nil {
		return nil, err
	}
	if pod.Spec.HostNetwork {
		// It shares the node's UTS namespace: runc refuses to set a hostname there.
		hostname = ""
	}
	linux := sandboxLinuxConfig(pod, m.seccomp())
	m.setSandboxResources(pod, linux)
	if err := m.sandboxUserAndGroups(pod, linux.SecurityContext); err != nil {
		return nil, err
	}
	labels := map[string]string{}
	for k, v := range pod.Labels {
		labels[k] = v
	}
	labels[container.LabelPodName] = pod.Name
	labels[container.LabelPodNamespace] = pod.Namespace
	labels[container.LabelPodUID] = string(pod.UID)
	if pod.Spec.NodeName != "" {
		labels[container.LabelNode] = pod.Spec.NodeName
	}
	annotations := map[string]string{}
	for k, v := range pod.Annotations {
		annotations[k] = v
	}
	return &runtimeapi.PodSandboxConfig{
		Metadata: &runtimeapi.PodSandboxMetadata{
			Name: pod.Name, Namespace: pod.Namespace, Uid: string(pod.UID), Attempt: attempt,
		},
		Hostname:     hostname,
		LogDirectory: m.podLogDir(pod),
		DnsConfig:    dnsCfg,
		PortMappings: portMappings(pod),
		Labels:       labels,
		Annotations:  annotations,
		Linux:        linux,
	}, nil
}

// maxFQDNHostname is the longest hostname the kernel takes (HOST_NAME_MAX + 1 in uts).
const maxFQDNHostname = 64

// fqdnHostname returns the pod's fully qualified name when it asks for it as its hostname
// (setHostnameAsFQDN with a subdomain), else hostname unchanged.
func (m *Manager) fqdnHostname(pod *v1.Pod, hostname string) (string, error) {
	if pod.Spec.HostNetwork || pod.Spec.SetHostnameAsFQDN == nil || !*pod.Spec.SetHostnameAsFQDN || pod.Spec.Subdomain == "" {
		return hostname, nil
	}
	fqdn := fmt.Sprintf("%s.%s.%s.svc.%s", hostname, pod.Spec.Subdomain, pod.Namespace, m.dns.ClusterDomain())
	if len(fqdn) > maxFQDNHostname {
		// API users match this message's start.
		return "", fmt.Errorf("failed to construct FQDN from pod hostname and cluster domain, FQDN %s is too long (%d characters is the max, %d characters requested)",
			fqdn, maxFQDNHostname, len(fqdn))
	}
	return fqdn, nil
}

// portMappings lists the hostPort mappings of all containers.
func portMappings(pod *v1.Pod) []*runtimeapi.PortMapping {
	var out []*runtimeapi.PortMapping
	for _, c := range pod.Spec.Containers {
		for _, p := range c.Ports {
			if p.HostPort <= 0 {
				continue
			}
			out = append(out, &runtimeapi.PortMapping{
				Protocol:      criProtocol(p.Protocol),
				ContainerPort: p.ContainerPort,
				HostPort:      p.HostPort,
				HostIp:        p.HostIP,
			})
		}
	}
	return out
}

func criProtocol(p v1.Protocol) runtimeapi.Protocol {
	switch p {
	case v1.ProtocolUDP:
		return runtimeapi.Protocol_UDP
	case v1.ProtocolSCTP:
		return runtimeapi.Protocol_SCTP
	}
	return runtimeapi.Protocol_TCP
}

// sandboxLinuxConfig carries the pod-level security context: namespaces, users, seccomp,
// sysctls. A sandbox must be privileged for any of its containers to be.
func sandboxLinuxConfig(pod *v1.Pod, seccomp containeropts.Seccomp) *runtimeapi.LinuxPodSandboxConfig {
	sc := &runtimeapi.LinuxSandboxSecurityContext{
		NamespaceOptions: containeropts.NamespaceOptions(pod),
		Privileged:       anyPrivileged(pod),
	}
	cfg := &runtimeapi.LinuxPodSandboxConfig{SecurityContext: sc}
	psc := pod.Spec.SecurityContext
	if psc == nil {
		sc.Seccomp = seccomp.Profile(nil)
		return cfg
	}
	sc.Seccomp = seccomp.Profile(psc.SeccompProfile)
	if se := psc.SELinuxOptions; se != nil {
		sc.SelinuxOptions = &runtimeapi.SELinuxOption{User: se.User, Role: se.Role, Type: se.Type, Level: se.Level}
	}
	if psc.RunAsUser != nil {
		sc.RunAsUser = &runtimeapi.Int64Value{Value: *psc.RunAsUser}
	}
	if psc.RunAsGroup != nil {
		sc.RunAsGroup = &runtimeapi.Int64Value{Value: *psc.RunAsGroup}
	}
	sc.SupplementalGroups = containeropts.SupplementalGroups(psc)
	if len(psc.Sysctls) > 0 {
		cfg.Sysctls = map[string]string{}
		for _, s := range psc.Sysctls {
			cfg.Sysctls[sysctl.Normalize(s.Name)] = s.Value
		}
	}
	return cfg
}

func anyPrivileged(pod *v1.Pod) bool {
	for _, list := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range list {
			if c.SecurityContext != nil && c.SecurityContext.Privileged != nil && *c.SecurityContext.Privileged {
				return true
			}
		}
	}
	return false
}

// handler is pod's CRI runtime handler, "" (the runtime's default) without RuntimeClasses.
func (m *Manager) handler(pod *v1.Pod) (string, error) {
	if m.classes == nil {
		return "", nil
	}
	return m.classes.Handler(pod)
}

// sandboxInfo is what container creation needs to know about the sandbox it goes into.
type sandboxInfo struct {
	id     string
	config *runtimeapi.PodSandboxConfig
	ips    []string
	// imageVolumes are the pod's image volumes as this sync ensured their images.
	imageVolumes imageVolumes
}

// createSandbox makes the pod's log directory and runs a new sandbox for attempt.
func (m *Manager) createSandbox(ctx context.Context, pod *v1.Pod, attempt uint32) (*sandboxInfo, error) {
	cfg, err := m.sandboxConfig(ctx, pod, attempt)
	if err != nil {
		return nil, err // says what it could not build
	}
	handler, err := m.handler(pod)
	if err != nil {
		return nil, err // upstream's wording: runtimeclass.node.k8s.io "x" not found
	}
	if err := os.MkdirAll(cfg.LogDirectory, 0o755); err != nil {
		return nil, fmt.Errorf("create pod log directory: %w", err)
	}
	if err := m.mounts.EtcHosts.Forget(pod); err != nil { // the new sandbox's first container writes it
		return nil, err
	}
	metrics.StartedPod()
	start := time.Now()
	sandboxDone := m.begin(pod, timeline.SandboxCreated, "", "RunPodSandbox", handler)
	id, err := m.cri.RunPodSandbox(ctx, cfg, handler)
	metrics.RanPodSandbox(handler, time.Since(start), err != nil)
	if err != nil {
		metrics.StartPodFailed()
		sandboxDone("", err)
		return nil, fmt.Errorf("run pod sandbox: %w", err)
	}
	st, err := m.cri.PodSandboxStatus(ctx, id)
	if err != nil {
		sandboxDone("", err)
		return nil, fmt.Errorf("sandbox %s status: %w", id, err)
	}
	ips := sandboxIPs(st)
	sandboxDone(strings.Join(ips, ","), nil)
	return &sandboxInfo{id: id, config: cfg, ips: ips}, nil
}

// sandboxIPs lists the primary IP first, then additional ones.
func sandboxIPs(st *runtimeapi.PodSandboxStatus) []string {
	var ips []string
	if ip := st.GetNetwork().GetIp(); ip != "" {
		ips = append(ips, ip)
	}
	for _, extra := range st.GetNetwork().GetAdditionalIps() {
		if extra.GetIp() != "" {
			ips = append(ips, extra.GetIp())
		}
	}
	return ips
}
