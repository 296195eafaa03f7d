package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"
)

// writeConfig writes content to a temporary file and returns its path.
func writeConfig(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

const header = "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"

func TestLoadYAML(t *testing.T) {
	kc, err := Load("testdata/kubelet.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dir, _ := filepath.Abs("testdata")
	if want := filepath.Join(dir, "manifests"); kc.StaticPodPath != want {
		t.Errorf("staticPodPath = %q, want %q (resolved against the file's directory)", kc.StaticPodPath, want)
	}
	if kc.MaxPods != 42 {
		t.Errorf("maxPods = %d, want 42", kc.MaxPods)
	}
	if kc.SyncFrequency.Duration != 30*time.Second {
		t.Errorf("syncFrequency = %s, want 30s", kc.SyncFrequency.Duration)
	}
	if kc.HealthzPort == nil || *kc.HealthzPort != 0 {
		t.Errorf("healthzPort = %v, want explicit 0", kc.HealthzPort)
	}
	if kc.CgroupDriver != "systemd" {
		t.Errorf("cgroupDriver = %q, want systemd", kc.CgroupDriver)
	}
	if a := kc.Authentication.Anonymous.Enabled; a == nil || !*a {
		t.Errorf("authentication.anonymous.enabled = %v, want true", a)
	}
	if ca := kc.Authentication.X509.ClientCAFile; ca != "/etc/nodelet/ca.crt" {
		t.Errorf("clientCAFile = %q, an absolute path must stay as written", ca)
	}
	if got := kc.StaticPodURLHeader["X-Token"]; len(got) != 1 || got[0] != "secret" {
		t.Errorf("staticPodURLHeader = %v", kc.StaticPodURLHeader)
	}
	if len(kc.EvictionHard) != 1 || kc.EvictionHard["memory.available"] != "200Mi" {
		t.Errorf("evictionHard = %v, want only the file's entry", kc.EvictionHard)
	}
	// Load applies no defaults.
	if kc.Port != 0 {
		t.Errorf("port = %d, Load must not default", kc.Port)
	}
}

func TestLoadJSON(t *testing.T) {
	kc, err := Load("testdata/kubelet.json")
	if err != nil {
		t.Fatal(err)
	}
	if kc.MaxPods != 17 || kc.StaticPodPath != "/etc/nodelet/manifests" {
		t.Errorf("maxPods = %d, staticPodPath = %q", kc.MaxPods, kc.StaticPodPath)
	}
	if kc.FileCheckFrequency.Duration != 5*time.Second {
		t.Errorf("fileCheckFrequency = %s, want 5s", kc.FileCheckFrequency.Duration)
	}
	if kc.RegisterNode == nil || *kc.RegisterNode {
		t.Errorf("registerNode = %v, want explicit false", kc.RegisterNode)
	}
	if kc.Authorization.Mode != kubeletconfigv1beta1.KubeletAuthorizationModeAlwaysAllow {
		t.Errorf("authorization.mode = %q", kc.Authorization.Mode)
	}
}

func TestLoadRejectsBadFiles(t *testing.T) {
	tests := []struct {
		name    string
		content string
		want    []string
	}{
		{"unknown top-level field", header + "maxPodz: 3\n", []string{`unknown field "maxPodz"`}},
		{"unknown nested field", header + "authentication:\n  webhook:\n    enabledd: true\n",
			[]string{`unknown field "authentication.webhook.enabledd"`}},
		{"field names are case-sensitive", header + "MaxPods: 3\n", []string{`unknown field "MaxPods"`}},
		{"several unknown fields", header + "foo: 1\nbar: 2\n", []string{`"foo"`, `"bar"`}},
		{"duplicate field", header + "maxPods: 3\nmaxPods: 4\n", []string{"maxPods"}},
		{"wrong kind", "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: Pod\n", []string{`kind: must be "KubeletConfiguration", got "Pod"`}},
		{"wrong apiVersion", "apiVersion: v1\nkind: KubeletConfiguration\n", []string{`apiVersion: must be "kubelet.config.k8s.io/v1beta1", got "v1"`}},
		{"missing type", "maxPods: 3\n", []string{"apiVersion", "kind"}},
		{"wrong value type", header + "maxPods: lots\n", []string{"maxPods"}},
		{"not YAML", header + "maxPods: [\n", []string{"parsing"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeConfig(t, "kubelet.yaml", tt.content)
			_, err := Load(path)
			if err == nil {
				t.Fatal("Load succeeded, want an error")
			}
			for _, want := range tt.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not mention %q", err, want)
				}
			}
			if !strings.Contains(err.Error(), path) {
				t.Errorf("error %q does not name the file", err)
			}
		})
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "absent.yaml"))
	if err == nil || !strings.Contains(err.Error(), "absent.yaml") {
		t.Fatalf("err = %v, want an error naming the file", err)
	}
}

// The example the README points at must load and pass validation as it is.
func TestExampleConfigIsValid(t *testing.T) {
	kc, err := Load("../../examples/kubelet-config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	SetDefaults(kc)
	if err := Validate(kc); err != nil {
		t.Fatalf("examples/kubelet-config.yaml: %v", err)
	}
}
