package config

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// The drop-ins merge as upstream's JSON merge patch: in lexical order (subdirectories
// included, other suffixes skipped), scalars replaced, maps merged key by key, lists replaced
// whole, null removing the field; flags beat every file.
func TestDropInsMergeAsUpstream(t *testing.T) {
	dir := t.TempDir()
	base := writeFile(t, dir, "config.yaml", header+"port: 20250\naddress: 192.168.0.1\nclusterDNS: [192.168.0.9, 192.168.0.8]\n"+
		"featureGates: {UserNamespacesSupport: false, KubeletPodResourcesGet: false}\n"+
		"authorization: {mode: Webhook, webhook: {cacheAuthorizedTTL: 5m, cacheUnauthorizedTTL: 30s}}\nmaxPods: 50\nsystemReserved: {cpu: 100m}\n")
	drop := filepath.Join(dir, "conf.d")
	writeFile(t, drop, "10-dns.conf", header+"clusterDNS: [192.168.0.2]\naddress: 192.168.0.8\nfeatureGates: {KubeletPodResourcesGet: true}\n")
	writeFile(t, drop, "20-auth.conf", header+"authorization: {webhook: {cacheAuthorizedTTL: 8m}}\nmaxPods: 60\nsystemReserved: null\n")
	writeFile(t, drop, "30-sub/50-pods.conf", header+"maxPods: 70\n")
	writeFile(t, drop, "99-ignored.yaml", header+"maxPods: 99\n")
	writeFile(t, drop, "90-ignored.conf.bak", "not yaml: [")

	cfg := mustComplete(t, "--config="+base, "--config-dir="+drop, "--address=10.0.0.1")
	kc := cfg.Kubelet
	if kc.Port != 20250 || kc.Address != "10.0.0.1" {
		t.Errorf("port %d, address %q: want the base's port and the flag's address", kc.Port, kc.Address)
	}
	if !slices.Equal(kc.ClusterDNS, []string{"192.168.0.2"}) {
		t.Errorf("clusterDNS = %v: a list is replaced whole", kc.ClusterDNS)
	}
	if kc.FeatureGates["UserNamespacesSupport"] || !kc.FeatureGates["KubeletPodResourcesGet"] || len(kc.FeatureGates) != 2 {
		t.Errorf("featureGates = %v: maps merge key by key", kc.FeatureGates)
	}
	w := kc.Authorization.Webhook
	if kc.Authorization.Mode != "Webhook" || w.CacheAuthorizedTTL.Duration.String() != "8m0s" || w.CacheUnauthorizedTTL.Duration.String() != "30s" {
		t.Errorf("authorization = %+v: nested objects merge field by field", kc.Authorization)
	}
	if kc.MaxPods != 70 {
		t.Errorf("maxPods = %d: the subdirectory's file (30-sub/50-pods.conf) comes last; other suffixes are skipped", kc.MaxPods)
	}
	if len(kc.SystemReserved) != 0 {
		t.Errorf("systemReserved = %v: null removes the field", kc.SystemReserved)
	}
}

// Without --config the drop-ins merge over the defaults; a field a drop-in zeroes is
// defaulted again, as upstream defaults the merged result.
func TestDropInsWithoutConfigFile(t *testing.T) {
	drop := t.TempDir()
	writeFile(t, drop, "a.conf", header+"port: 0\nmaxPods: 12\n")
	cfg := mustComplete(t, "--config-dir="+drop)
	if cfg.Kubelet.Port != 10250 || cfg.Kubelet.MaxPods != 12 {
		t.Errorf("port %d, maxPods %d", cfg.Kubelet.Port, cfg.Kubelet.MaxPods)
	}
}

// A drop-in that is not a KubeletConfiguration on its own is refused, naming the file.
func TestDropInRefusals(t *testing.T) {
	for content, want := range map[string]string{
		"":                          "file is empty",
		"maxPods: 3\n":              `apiVersion: must be "kubelet.config.k8s.io/v1beta1"`,
		header + "maxPodz: 3\n":     `unknown field "maxPodz"`,
		header + "maxPods: three\n": "maxPods",
		header + "featureGates: {NoSuchGate: true}\n": "unrecognized feature gate: NoSuchGate",
	} {
		drop := t.TempDir()
		path := writeFile(t, drop, "10-bad.conf", content)
		_, err := complete(t, "--config-dir="+drop)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("drop-in %q: error %v, want %q", content, err, want)
		}
		if err != nil && want != "unrecognized feature gate: NoSuchGate" && !strings.Contains(err.Error(), path) {
			t.Errorf("drop-in %q: error %v does not name %s", content, err, path)
		}
	}
	if _, err := complete(t, "--config-dir=/nonexistent/conf.d"); err == nil || !strings.Contains(err.Error(), "/nonexistent/conf.d") {
		t.Errorf("missing directory: %v", err)
	}
}
