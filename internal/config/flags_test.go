package config

import (
	"errors"
	"maps"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
)

// complete parses args as nodelet's command line and completes the config,
// with the machine's host name pinned to "Test-Host".
func complete(t *testing.T, args ...string) (*Config, error) {
	t.Helper()
	old := hostname
	hostname = func() (string, error) { return " Test-Host\n", nil }
	t.Cleanup(func() { hostname = old })

	fs := pflag.NewFlagSet("nodelet", pflag.ContinueOnError)
	flags := AddFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("parsing %v: %v", args, err)
	}
	return flags.Complete(fs)
}

func mustComplete(t *testing.T, args ...string) *Config {
	t.Helper()
	cfg, err := complete(t, args...)
	if err != nil {
		t.Fatalf("Complete(%v): %v", args, err)
	}
	return cfg
}

func TestCompleteWithoutFileUsesDefaults(t *testing.T) {
	cfg := mustComplete(t)
	if !reflect.DeepEqual(cfg.Kubelet, defaulted()) {
		t.Error("with no file and no flags the configuration should be exactly the defaults")
	}
	if cfg.RootDir != "/var/lib/kubelet" || cfg.CertDir != "/var/lib/kubelet/pki" {
		t.Errorf("rootDir = %q, certDir = %q", cfg.RootDir, cfg.CertDir)
	}
	if cfg.NodeName != "test-host" {
		t.Errorf("nodeName = %q, want the host name lower-cased and trimmed", cfg.NodeName)
	}
	if !cfg.RegisterNode || cfg.RunOnce || cfg.Kubeconfig != "" {
		t.Errorf("registerNode = %v, runOnce = %v, kubeconfig = %q", cfg.RegisterNode, cfg.RunOnce, cfg.Kubeconfig)
	}
}

func TestCommandLineFlagBeatsFile(t *testing.T) {
	cfg := mustComplete(t, "--config=testdata/kubelet.yaml",
		"--max-pods=5", "--pod-manifest-path=/srv/pods", "--healthz-port=9999",
		"--cgroup-driver=cgroupfs", "--anonymous-auth=false", "--authorization-mode=AlwaysAllow",
		"--sync-frequency=7s", "--cluster-dns=10.0.0.2,10.0.0.3")
	kc := cfg.Kubelet
	if kc.MaxPods != 5 || kc.StaticPodPath != "/srv/pods" || *kc.HealthzPort != 9999 || kc.CgroupDriver != "cgroupfs" {
		t.Errorf("flags did not override the file: maxPods=%d staticPodPath=%q healthzPort=%d cgroupDriver=%q",
			kc.MaxPods, kc.StaticPodPath, *kc.HealthzPort, kc.CgroupDriver)
	}
	if *kc.Authentication.Anonymous.Enabled || kc.Authorization.Mode != "AlwaysAllow" {
		t.Errorf("anonymous=%v mode=%q", *kc.Authentication.Anonymous.Enabled, kc.Authorization.Mode)
	}
	if kc.SyncFrequency.Duration != 7*time.Second {
		t.Errorf("syncFrequency = %s", kc.SyncFrequency.Duration)
	}
	if want := []string{"10.0.0.2", "10.0.0.3"}; !reflect.DeepEqual(kc.ClusterDNS, want) {
		t.Errorf("clusterDNS = %v, want %v", kc.ClusterDNS, want)
	}
}

func TestFlagNotGivenLeavesFileValue(t *testing.T) {
	// Only --port is given; every other value must come from the file or,
	// where the file is silent, from the defaults.
	cfg := mustComplete(t, "--config=testdata/kubelet.yaml", "--port=11250")
	kc := cfg.Kubelet
	if kc.Port != 11250 {
		t.Errorf("port = %d, want the flag's 11250", kc.Port)
	}
	if kc.MaxPods != 42 || kc.CgroupDriver != "systemd" || *kc.HealthzPort != 0 ||
		kc.SyncFrequency.Duration != 30*time.Second || !*kc.Authentication.Anonymous.Enabled {
		t.Errorf("a flag default overwrote the file: maxPods=%d cgroupDriver=%q healthzPort=%d syncFrequency=%s",
			kc.MaxPods, kc.CgroupDriver, *kc.HealthzPort, kc.SyncFrequency.Duration)
	}
	if !maps.Equal(kc.EvictionHard, map[string]string{"memory.available": "200Mi"}) {
		t.Errorf("evictionHard = %v, want the file's map", kc.EvictionHard)
	}
	if got := kc.StaticPodURLHeader["X-Token"]; len(got) != 1 || got[0] != "secret" {
		t.Errorf("staticPodURLHeader = %v, want the file's headers", kc.StaticPodURLHeader)
	}
	if kc.FileCheckFrequency.Duration != 20*time.Second {
		t.Errorf("fileCheckFrequency = %s, want the default", kc.FileCheckFrequency.Duration)
	}
	if cfg.ConfigFile != "testdata/kubelet.yaml" {
		t.Errorf("configFile = %q", cfg.ConfigFile)
	}
}

func TestBoolFlagFalseOverridesFileTrue(t *testing.T) {
	cfg := mustComplete(t, "--config=testdata/kubelet.json", "--register-node=true", "--runonce")
	if !cfg.RegisterNode || !cfg.RunOnce || !cfg.Kubelet.RunOnce {
		t.Errorf("registerNode = %v, runOnce = %v", cfg.RegisterNode, cfg.RunOnce)
	}
	cfg = mustComplete(t, "--config=testdata/kubelet.json")
	if cfg.RegisterNode {
		t.Error("registerNode: the file's false was lost")
	}
}

func TestCompleteReportsBadFlagsByField(t *testing.T) {
	_, err := complete(t, "--max-pods=-1", "--file-check-frequency=0s", "--node-ip=not-an-ip")
	if err == nil {
		t.Fatal("Complete accepted bad flags")
	}
	for _, want := range []string{
		"invalid configuration: maxPods: must be >= 0, got -1",
		"invalid configuration: fileCheckFrequency: must be > 0, got 0s",
		`invalid configuration: --node-ip: must be an IP address, got "not-an-ip"`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}

func TestCompleteRejectsBadFile(t *testing.T) {
	path := writeConfig(t, "k.yaml", header+"maxPodz: 1\n")
	if _, err := complete(t, "--config="+path); err == nil || !strings.Contains(err.Error(), `unknown field "maxPodz"`) {
		t.Errorf("err = %v, want the unknown field named", err)
	}
	path = writeConfig(t, "k.yaml", header+"maxPods: -4\n")
	if _, err := complete(t, "--config="+path); err == nil || !strings.Contains(err.Error(), "maxPods: must be >= 0, got -4") {
		t.Errorf("err = %v, want the file's bad maxPods reported", err)
	}
}

func TestManifestURLHeaderFlag(t *testing.T) {
	cfg := mustComplete(t, "--manifest-url=http://127.0.0.1:8080/pods",
		"--manifest-url-header=Authorization:Bearer abc:def",
		"--manifest-url-header=X-A:1,X-A:2, X-B : 3")
	want := map[string][]string{
		"Authorization": {"Bearer abc:def"},
		"X-A":           {"1", "2"},
		"X-B":           {"3"},
	}
	if got := cfg.Kubelet.StaticPodURLHeader; !reflect.DeepEqual(got, want) {
		t.Errorf("staticPodURLHeader = %v, want %v", got, want)
	}
	if cfg.Kubelet.StaticPodURL != "http://127.0.0.1:8080/pods" {
		t.Errorf("staticPodURL = %q", cfg.Kubelet.StaticPodURL)
	}
}

func TestManifestURLHeaderFlagReplacesFileHeaders(t *testing.T) {
	cfg := mustComplete(t, "--config=testdata/kubelet.yaml", "--manifest-url-header=X-New:v")
	want := map[string][]string{"X-New": {"v"}}
	if got := cfg.Kubelet.StaticPodURLHeader; !reflect.DeepEqual(got, want) {
		t.Errorf("staticPodURLHeader = %v, want %v", got, want)
	}
}

func TestHeaderValueRejectsMalformedPairs(t *testing.T) {
	for _, in := range []string{"no-colon", ":value", "a:1,broken"} {
		headers := map[string][]string{}
		if err := (&headerValue{headers: &headers}).Set(in); err == nil {
			t.Errorf("Set(%q) succeeded, want an error", in)
		}
	}
	headers := map[string][]string{}
	h := &headerValue{headers: &headers}
	if err := h.Set("B:2,A:1,A:0"); err != nil {
		t.Fatal(err)
	}
	if got := h.String(); got != "A:1,A:0,B:2" {
		t.Errorf("String() = %q", got)
	}
}

func TestTaintAndLabelFlags(t *testing.T) {
	cfg := mustComplete(t, "--register-with-taints=dedicated=db:NoSchedule,example.com/gpu:NoExecute",
		"--node-labels=zone=a,node.kubernetes.io/pool=blue")
	want := []corev1.Taint{
		{Key: "dedicated", Value: "db", Effect: corev1.TaintEffectNoSchedule},
		{Key: "example.com/gpu", Effect: corev1.TaintEffectNoExecute},
	}
	if !reflect.DeepEqual(cfg.RegisterWithTaints, want) || !reflect.DeepEqual(cfg.Kubelet.RegisterWithTaints, want) {
		t.Errorf("taints = %v, want %v", cfg.RegisterWithTaints, want)
	}
	if want := map[string]string{"zone": "a", "node.kubernetes.io/pool": "blue"}; !maps.Equal(cfg.NodeLabels, want) {
		t.Errorf("nodeLabels = %v, want %v", cfg.NodeLabels, want)
	}

	if _, err := complete(t, "--node-labels=node-role.kubernetes.io/worker="); err == nil ||
		!strings.Contains(err.Error(), "--node-labels") {
		t.Errorf("err = %v, want the reserved label namespace refused", err)
	}
	fs := pflag.NewFlagSet("nodelet", pflag.ContinueOnError)
	AddFlags(fs)
	if err := fs.Parse([]string{"--register-with-taints=missing-effect"}); err == nil {
		t.Error("a taint without an effect was accepted")
	}
}

func TestEvictionHardFlag(t *testing.T) {
	cfg := mustComplete(t, "--eviction-hard=memory.available<1Gi,nodefs.available<5%")
	want := map[string]string{"memory.available": "1Gi", "nodefs.available": "5%"}
	if !maps.Equal(cfg.Kubelet.EvictionHard, want) {
		t.Errorf("evictionHard = %v, want %v", cfg.Kubelet.EvictionHard, want)
	}
}

func TestCgroupsPerQOSOffNeedsNoEnforcement(t *testing.T) {
	if _, err := complete(t, "--cgroups-per-qos=false"); err == nil || !strings.Contains(err.Error(), "enforceNodeAllocatable") {
		t.Errorf("err = %v, want enforceNodeAllocatable named", err)
	}
	cfg := mustComplete(t, "--cgroups-per-qos=false", "--enforce-node-allocatable=")
	if len(cfg.Kubelet.EnforceNodeAllocatable) != 0 {
		t.Errorf("enforceNodeAllocatable = %v, want empty", cfg.Kubelet.EnforceNodeAllocatable)
	}
}

func TestNodeNameFromOverride(t *testing.T) {
	cfg := mustComplete(t, "--hostname-override=  Worker-1.Example.COM ")
	if cfg.NodeName != "worker-1.example.com" {
		t.Errorf("nodeName = %q", cfg.NodeName)
	}
	if _, err := complete(t, "--hostname-override=bad_name"); err == nil || !strings.Contains(err.Error(), "--hostname-override") {
		t.Errorf("err = %v, want the invalid node name refused", err)
	}
}

func TestNodeNameWhenHostnameFails(t *testing.T) {
	old := hostname
	hostname = func() (string, error) { return "", errors.New("no uts") }
	defer func() { hostname = old }()

	fs := pflag.NewFlagSet("nodelet", pflag.ContinueOnError)
	flags := AddFlags(fs)
	if _, err := flags.Complete(fs); err == nil || !strings.Contains(err.Error(), "--hostname-override") {
		t.Errorf("err = %v, want a hint to set --hostname-override", err)
	}
}

func TestVerbosityFlagAndFile(t *testing.T) {
	defer func() {
		var level klog.Level
		_ = level.Set("0")
		fs := pflag.NewFlagSet("reset", pflag.ContinueOnError)
		AddFlags(fs)
		_ = fs.Parse([]string{"-v=0"})
	}()

	cfg := mustComplete(t, "-v=3")
	if cfg.Kubelet.Logging.Verbosity != 3 || !klog.V(3).Enabled() {
		t.Errorf("logging.verbosity = %d, klog V(3) enabled = %v", cfg.Kubelet.Logging.Verbosity, klog.V(3).Enabled())
	}

	path := writeConfig(t, "k.yaml", header+"logging:\n  verbosity: 5\n")
	mustComplete(t, "--config="+path)
	if !klog.V(5).Enabled() {
		t.Error("the file's logging.verbosity was not applied to klog")
	}
	cfg = mustComplete(t, "--config="+path, "--v=1")
	if cfg.Kubelet.Logging.Verbosity != 1 || klog.V(2).Enabled() {
		t.Errorf("-v=1 must beat the file: logging.verbosity = %d", cfg.Kubelet.Logging.Verbosity)
	}
}

// logging.vmodule reaches klog (this file's name is the pattern), and --vmodule beats it.
func TestVModuleFlagAndFile(t *testing.T) {
	defer func() {
		fs := pflag.NewFlagSet("reset", pflag.ContinueOnError)
		AddFlags(fs)
		_ = fs.Parse([]string{"--vmodule="})
	}()
	path := writeConfig(t, "k.yaml", header+"logging:\n  vmodule:\n  - filePattern: flags_test\n    verbosity: 4\n")
	cfg := mustComplete(t, "--config="+path)
	if !klog.V(4).Enabled() || klog.V(5).Enabled() {
		t.Errorf("the file's logging.vmodule was not applied to klog: V(4) %v, V(5) %v", klog.V(4).Enabled(), klog.V(5).Enabled())
	}
	if len(cfg.Kubelet.Logging.VModule) != 1 {
		t.Errorf("logging.vmodule = %v", cfg.Kubelet.Logging.VModule)
	}
	cfg = mustComplete(t, "--config="+path, "--vmodule=flags_test=2")
	if klog.V(3).Enabled() || !klog.V(2).Enabled() {
		t.Error("--vmodule=flags_test=2 must beat the file")
	}
	if got := cfg.Kubelet.Logging.VModule; len(got) != 1 || got[0].Verbosity != 2 {
		t.Errorf("logging.vmodule = %v, want the flag's", got)
	}
}

func TestPodInfraContainerImageIsAcceptedAndIgnored(t *testing.T) {
	cfg := mustComplete(t, "--pod-infra-container-image=registry.k8s.io/pause:3.10")
	if !reflect.DeepEqual(cfg.Kubelet, defaulted()) {
		t.Error("--pod-infra-container-image changed the configuration")
	}
}

// Bootstrapping and rotation need an API server to talk to.
func TestCertificateFlagsNeedAKubeconfig(t *testing.T) {
	for flag, args := range map[string][]string{
		"--bootstrap-kubeconfig": {"--bootstrap-kubeconfig=/etc/bootstrap.kubeconfig"},
		"rotateCertificates":     {"--rotate-certificates"},
	} {
		if _, err := complete(t, args...); err == nil || !strings.Contains(err.Error(), flag) {
			t.Errorf("%v: err %v, want one naming %s", args, err, flag)
		}
	}
	cfg := mustComplete(t, "--bootstrap-kubeconfig=/b", "--kubeconfig=/k", "--rotate-certificates")
	if cfg.BootstrapKubeconfig != "/b" || !cfg.Kubelet.RotateCertificates {
		t.Errorf("bootstrap %q rotate %v", cfg.BootstrapKubeconfig, cfg.Kubelet.RotateCertificates)
	}
}
