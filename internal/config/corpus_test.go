package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestNodeConfigCorpus starts nodelet's configuration on real nodes' kubelet configurations
// (testdata/corpus/README.md says where each comes from): each loads and validates, or is
// refused naming exactly what the upstream kubelet v1.33 refuses in it.
func TestNodeConfigCorpus(t *testing.T) {
	dirs, err := filepath.Glob("testdata/corpus/*/args")
	if err != nil || len(dirs) < 4 {
		t.Fatalf("corpus: %v %v", dirs, err)
	}
	for _, argsFile := range dirs {
		dir, _ := filepath.Abs(filepath.Dir(argsFile))
		t.Run(filepath.Base(dir), func(t *testing.T) {
			args := corpusArgs(t, dir)
			cfg, err := complete(t, args...)
			refused, _ := os.ReadFile(filepath.Join(dir, "refused"))
			want := strings.TrimSpace(string(refused))
			switch {
			case want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
				t.Fatalf("error %v, want %q", err, want)
			case want == "":
				checkCorpusResult(t, filepath.Base(dir), cfg)
			}
		})
	}
}

// corpusArgs reads the directory's command line, and kubeadm's flags file when there is one.
func corpusArgs(t *testing.T, dir string) []string {
	data, err := os.ReadFile(filepath.Join(dir, "args"))
	if err != nil {
		t.Fatal(err)
	}
	args := strings.Fields(strings.ReplaceAll(string(data), "$DIR", dir))
	if env, err := os.ReadFile(filepath.Join(dir, "kubeadm-flags.env")); err == nil {
		value := strings.TrimPrefix(strings.TrimSpace(string(env)), "KUBELET_KUBEADM_ARGS=")
		args = append(args, strings.Fields(strings.Trim(value, `"`))...)
	}
	return args
}

// checkCorpusResult checks that what each configuration says was taken.
func checkCorpusResult(t *testing.T, name string, cfg *Config) {
	kc := cfg.Kubelet
	switch name {
	case "kubeadm-v1.33":
		if kc.StaticPodPath != "/etc/kubernetes/manifests" || kc.Authorization.Mode != "Webhook" || kc.SyncFrequency.Duration.String() != "1m0s" ||
			kc.ContainerRuntimeEndpoint != "unix:///var/run/containerd/containerd.sock" {
			t.Errorf("staticPodPath %q, authorization %q, syncFrequency %s (0s must default), runtime %q",
				kc.StaticPodPath, kc.Authorization.Mode, kc.SyncFrequency.Duration, kc.ContainerRuntimeEndpoint)
		}
	case "eks-nodeadm-style":
		if !cfg.ExternalCloudProvider || kc.MaxPods != 58 || strings.Join(kc.ClusterDNS, ",") != "10.100.0.10,10.100.0.11" ||
			!kc.FeatureGates["InPlacePodVerticalScaling"] || !kc.FeatureGates["RotateKubeletServerCertificate"] || !cfg.UserNamespacesSupport {
			t.Errorf("external %v, maxPods %d, clusterDNS %v, featureGates %v", cfg.ExternalCloudProvider, kc.MaxPods, kc.ClusterDNS, kc.FeatureGates)
		}
	}
}
