//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/nodelet/nodelet/internal/testutil"
)

// An upstream-style configuration with a drop-in directory and feature gates: the real binary
// starts on it and /configz shows the merge as the upstream kubelet makes it (drop-ins in
// lexical order over --config, maps merged key by key, lists replaced, flags last and
// --feature-gates gate by gate), with gates at their defaults that used to stop start-up.
func TestConfigDirAndFeatureGatesShowInConfigz(t *testing.T) {
	dir := t.TempDir()
	const header = "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"
	write := func(name, content string) {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(header+content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("config.yaml", "maxPods: 50\neventBurst: 20\nclusterDNS: [10.0.0.1, 10.0.0.2]\nfeatureGates: {KubeletPodResourcesGet: false, UserNamespacesSupport: true}\n")
	write("conf.d/10-gates.conf", "maxPods: 60\nfeatureGates: {InPlacePodVerticalScaling: true, RotateKubeletServerCertificate: true}\nclusterDNS: [10.0.0.9]\n")
	write("conf.d/20-pods.conf", "maxPods: 70\neventBurst: 42\n")

	apiPort := freePort(t)
	startNodelet(t, append(secretsOpenAPI(t, apiPort), "--address=127.0.0.1",
		"--config="+filepath.Join(dir, "config.yaml"), "--config-dir="+filepath.Join(dir, "conf.d"),
		"--event-burst=33", "--feature-gates=KubeletPodResourcesGet=true,SidecarContainers=true")...)

	var got struct {
		KubeletConfig struct {
			MaxPods      int32           `json:"maxPods"`
			EventBurst   int32           `json:"eventBurst"`
			ClusterDNS   []string        `json:"clusterDNS"`
			FeatureGates map[string]bool `json:"featureGates"`
		} `json:"kubeletconfig"`
	}
	url := fmt.Sprintf("https://127.0.0.1:%d/configz", apiPort)
	testutil.WaitFor(t, 30*time.Second, "the kubelet API serving /configz", func() (bool, string) {
		code, body, err := tryGet(secretsInsecure, url) // healthz answers a moment before the API listens
		if err != nil || code != http.StatusOK {
			return false, fmt.Sprintf("%d %s", code, body)
		}
		return json.Unmarshal([]byte(body), &got) == nil, body
	})
	kc := got.KubeletConfig
	if kc.MaxPods != 70 || kc.EventBurst != 33 {
		t.Errorf("maxPods %d (want 70, the last drop-in), eventBurst %d (want 33, the flag)", kc.MaxPods, kc.EventBurst)
	}
	if !slices.Equal(kc.ClusterDNS, []string{"10.0.0.9"}) {
		t.Errorf("clusterDNS %v, want the drop-in's list whole", kc.ClusterDNS)
	}
	wantGates := map[string]bool{"KubeletPodResourcesGet": true, "UserNamespacesSupport": true,
		"InPlacePodVerticalScaling": true, "RotateKubeletServerCertificate": true, "SidecarContainers": true}
	if len(kc.FeatureGates) != len(wantGates) {
		t.Errorf("featureGates %v, want %v", kc.FeatureGates, wantGates)
	}
	for gate, on := range wantGates {
		if v, ok := kc.FeatureGates[gate]; !ok || v != on {
			t.Errorf("featureGates %v, want %v", kc.FeatureGates, wantGates)
			break
		}
	}
}
