package containeropts

import (
	"bufio"
	"fmt"
	"os"
	"strings"
	"sync"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
)

// Resolver limits as glibc applies them; more entries are ignored by the resolver anyway.
const (
	maxDNSServers  = 3
	maxDNSSearches = 32
)

// DNS builds a pod's resolver config from its dnsPolicy.
type DNS struct {
	resolvConf    string
	clusterDNS    []string
	clusterDomain string
	fallbackOnce  sync.Once
}

// NewDNS returns the resolver configurer of a node: resolvConf is the host's resolver
// config (resolvConf; empty gives pods none of the host's), clusterDNS and clusterDomain serve
// dnsPolicy ClusterFirst.
func NewDNS(resolvConf string, clusterDNS []string, clusterDomain string) *DNS {
	if clusterDomain == "" {
		clusterDomain = "cluster.local"
	}
	return &DNS{resolvConf: resolvConf, clusterDNS: clusterDNS, clusterDomain: clusterDomain}
}

// PodDNSConfig returns the CRI DNS config for pod.
func (d *DNS) PodDNSConfig(pod *v1.Pod) (*runtimeapi.DNSConfig, error) {
	cfg := &runtimeapi.DNSConfig{}
	switch d.effectivePolicy(pod) {
	case v1.DNSNone:
		// Only pod.spec.dnsConfig, merged below.
	case v1.DNSDefault:
		host, err := parseResolvConf(d.resolvConf)
		if err != nil {
			return nil, err
		}
		cfg = host
	default: // cluster DNS
		host, err := parseResolvConf(d.resolvConf)
		if err != nil {
			return nil, err
		}
		cfg = &runtimeapi.DNSConfig{
			Servers: append([]string(nil), d.clusterDNS...),
			Searches: append([]string{
				pod.Namespace + ".svc." + d.clusterDomain, "svc." + d.clusterDomain, d.clusterDomain,
			}, host.Searches...),
			Options: []string{"ndots:5"},
		}
	}
	mergeDNSConfig(cfg, pod.Spec.DNSConfig)
	cfg.Servers = truncate(dedupe(cfg.Servers), maxDNSServers)
	cfg.Searches = truncate(dedupe(cfg.Searches), maxDNSSearches)
	return cfg, nil
}

// effectivePolicy resolves ClusterFirst* to Default where cluster DNS cannot apply: no cluster
// DNS configured, or ClusterFirst on a host-network pod.
func (d *DNS) effectivePolicy(pod *v1.Pod) v1.DNSPolicy {
	policy := pod.Spec.DNSPolicy
	switch policy {
	case v1.DNSNone, v1.DNSDefault:
		return policy
	case v1.DNSClusterFirstWithHostNet:
	default: // ClusterFirst or unset
		if pod.Spec.HostNetwork {
			return v1.DNSDefault
		}
	}
	if len(d.clusterDNS) == 0 {
		d.fallbackOnce.Do(func() {
			klog.InfoS("No cluster DNS configured; pods with dnsPolicy ClusterFirst use the host resolver config",
				"resolvConf", d.resolvConf)
		})
		return v1.DNSDefault
	}
	return v1.DNSClusterFirst
}

// mergeDNSConfig adds pod.spec.dnsConfig: servers and searches appended, options overriding
// options of the same name.
func mergeDNSConfig(cfg *runtimeapi.DNSConfig, podCfg *v1.PodDNSConfig) {
	if podCfg == nil {
		return
	}
	cfg.Servers = append(cfg.Servers, podCfg.Nameservers...)
	cfg.Searches = append(cfg.Searches, podCfg.Searches...)
	for _, o := range podCfg.Options {
		opt := o.Name
		if o.Value != nil {
			opt += ":" + *o.Value
		}
		replaced := false
		for i, existing := range cfg.Options {
			if name, _, _ := strings.Cut(existing, ":"); name == o.Name {
				cfg.Options[i], replaced = opt, true
			}
		}
		if !replaced {
			cfg.Options = append(cfg.Options, opt)
		}
	}
}

// parseResolvConf reads nameserver, search/domain and options lines. A missing file, or none
// configured (resolvConf ""), is an empty config, as on a host without a resolver.
func parseResolvConf(path string) (*runtimeapi.DNSConfig, error) {
	cfg := &runtimeapi.DNSConfig{}
	if path == "" {
		return cfg, nil
	}
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return cfg, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read resolver config: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if i := strings.IndexAny(line, "#;"); i >= 0 {
			line = line[:i]
		}
		fields := strings.Fields(line)
		if len(fields) < 2 {
			continue
		}
		switch fields[0] {
		case "nameserver":
			cfg.Servers = append(cfg.Servers, fields[1])
		case "search", "domain": // the last of them wins in the resolver
			cfg.Searches = append([]string(nil), fields[1:]...)
		case "options":
			cfg.Options = append(cfg.Options, fields[1:]...)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read resolver config: %w", err)
	}
	return cfg, nil
}

func dedupe(items []string) []string {
	seen := map[string]bool{}
	out := items[:0]
	for _, it := range items {
		if !seen[it] {
			seen[it] = true
			out = append(out, it)
		}
	}
	return out
}

func truncate(items []string, n int) []string {
	if len(items) > n {
		return items[:n]
	}
	return items
}

// ClusterDomain is the cluster's DNS domain (default cluster.local), for pod FQDNs.
func (d *DNS) ClusterDomain() string { return d.clusterDomain }
