package containeropts

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func writeResolvConf(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "resolv.conf")
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestPodDNSConfig(t *testing.T) {
	resolv := writeResolvConf(t, `# generated
nameserver 10.0.0.53
nameserver 10.0.0.54 ; second
domain ignored.example
search corp.example lab.example
options timeout:2 attempts:3
`)
	host := &runtimeapi.DNSConfig{
		Servers: []string{"10.0.0.53", "10.0.0.54"}, Searches: []string{"corp.example", "lab.example"},
		Options: []string{"timeout:2", "attempts:3"},
	}
	ndots := "2"
	tests := []struct {
		name       string
		clusterDNS []string
		policy     v1.DNSPolicy
		hostNet    bool
		podConfig  *v1.PodDNSConfig
		want       *runtimeapi.DNSConfig
	}{
		{name: "Default", policy: v1.DNSDefault, clusterDNS: []string{"10.96.0.10"}, want: host},
		{name: "ClusterFirst without cluster DNS falls back", policy: v1.DNSClusterFirst, want: host},
		{name: "unset policy is ClusterFirst", clusterDNS: []string{"10.96.0.10"}, want: &runtimeapi.DNSConfig{
			Servers:  []string{"10.96.0.10"},
			Searches: []string{"ns1.svc.cluster.local", "svc.cluster.local", "cluster.local", "corp.example", "lab.example"},
			Options:  []string{"ndots:5"},
		}},
		{name: "ClusterFirst on host network uses the host", policy: v1.DNSClusterFirst, hostNet: true,
			clusterDNS: []string{"10.96.0.10"}, want: host},
		{name: "ClusterFirstWithHostNet", policy: v1.DNSClusterFirstWithHostNet, hostNet: true,
			clusterDNS: []string{"10.96.0.10"}, want: &runtimeapi.DNSConfig{
				Servers:  []string{"10.96.0.10"},
				Searches: []string{"ns1.svc.cluster.local", "svc.cluster.local", "cluster.local", "corp.example", "lab.example"},
				Options:  []string{"ndots:5"},
			}},
		{name: "None takes only dnsConfig", policy: v1.DNSNone, podConfig: &v1.PodDNSConfig{
			Nameservers: []string{"1.1.1.1"}, Searches: []string{"a.example"},
			Options: []v1.PodDNSConfigOption{{Name: "ndots", Value: &ndots}, {Name: "edns0"}},
		}, want: &runtimeapi.DNSConfig{Servers: []string{"1.1.1.1"}, Searches: []string{"a.example"}, Options: []string{"ndots:2", "edns0"}}},
		{name: "dnsConfig merges", policy: v1.DNSDefault, podConfig: &v1.PodDNSConfig{
			Nameservers: []string{"10.0.0.53", "1.1.1.1", "8.8.8.8"}, Searches: []string{"lab.example", "x.example"},
			Options: []v1.PodDNSConfigOption{{Name: "timeout", Value: &ndots}},
		}, want: &runtimeapi.DNSConfig{
			Servers:  []string{"10.0.0.53", "10.0.0.54", "1.1.1.1"}, // deduplicated, at most 3
			Searches: []string{"corp.example", "lab.example", "x.example"},
			Options:  []string{"timeout:2", "attempts:3"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := NewDNS(resolv, tt.clusterDNS, "")
			pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns1"},
				Spec: v1.PodSpec{DNSPolicy: tt.policy, HostNetwork: tt.hostNet, DNSConfig: tt.podConfig}}
			got, err := d.PodDNSConfig(pod)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got.Servers, tt.want.Servers) || !reflect.DeepEqual(got.Searches, tt.want.Searches) ||
				!reflect.DeepEqual(got.Options, tt.want.Options) {
				t.Errorf("got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestMissingResolvConfIsEmpty(t *testing.T) {
	cfg, err := parseResolvConf(filepath.Join(t.TempDir(), "absent"))
	if err != nil || len(cfg.Servers)+len(cfg.Searches)+len(cfg.Options) != 0 {
		t.Errorf("cfg %+v err %v", cfg, err)
	}
}

// resolvConf "" (--resolv-conf="") gives dnsPolicy Default pods none of the host's resolver
// config, rather than falling back to /etc/resolv.conf.
func TestEmptyResolvConfGivesNoHostConfig(t *testing.T) {
	d := NewDNS("", nil, "")
	got, err := d.PodDNSConfig(&v1.Pod{Spec: v1.PodSpec{DNSPolicy: v1.DNSDefault}})
	if err != nil || len(got.Servers)+len(got.Searches)+len(got.Options) != 0 {
		t.Errorf("got %+v, %v; want an empty config", got, err)
	}
}
