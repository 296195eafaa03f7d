// Package config turns nodelet's command line and KubeletConfiguration file
// into one validated configuration.
//
// Precedence, lowest first: built-in defaults, the --config file, the drop-ins of
// --config-dir, flags given on the command line.
package config

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	logsapi "k8s.io/component-base/logs/api/v1"
	"k8s.io/klog/v2"
	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"
)

// Config is everything nodelet needs to start.
type Config struct {
	// Kubelet is the file's configuration with defaults and command-line flags applied.
	Kubelet    *kubeletconfigv1beta1.KubeletConfiguration
	ConfigFile string
	// ConfigDir (--config-dir) holds drop-ins merged over ConfigFile.
	ConfigDir  string
	Kubeconfig string
	// ExternalCloudProvider (--cloud-provider=external): the Node is registered with the
	// uninitialized taint and its addresses are left to the cloud controller manager.
	ExternalCloudProvider bool
	// RegisterUnschedulable (--register-schedulable=false) registers the Node unschedulable.
	RegisterUnschedulable bool
	// BootstrapKubeconfig requests the client certificate when Kubeconfig has none usable.
	BootstrapKubeconfig string
	// LockFile is held exclusively while running; ExitOnLockContention stops nodelet when
	// another process opens it.
	LockFile             string
	ExitOnLockContention bool
	// CredentialProviderConfig and CredentialProviderBinDir configure the credential provider
	// plugins (both or neither).
	CredentialProviderConfig string
	CredentialProviderBinDir string
	RootDir                  string
	HostnameOverride         string
	NodeIP                   string
	NodeName                 string // --hostname-override or the host name, lower-cased and trimmed
	RunOnce                  bool
	NodeLabels               map[string]string
	RegisterWithTaints       []corev1.Taint
	CertDir                  string
	// ContainerGC comes from deprecated flags only; PodInfraContainerImage is kept from image GC.
	ContainerGC            ContainerGCPolicy
	PodInfraContainerImage string
	// NodeUIPort, when not 0, serves the node page on NodeUIAddress over plain HTTP.
	NodeUIPort    int32
	NodeUIAddress string
	// NoPodTimeline turns off recording each pod's lifecycle steps (--pod-timeline=false).
	NoPodTimeline bool
	// AllowInsecureAnonymousAPI lets nodelet start with anonymous requests allowed everything
	// on a non-loopback API address (--allow-insecure-anonymous-api).
	AllowInsecureAnonymousAPI bool
	// StreamingVerbFromMethod authorizes exec, attach, port-forward and run with the HTTP
	// method's verb, as upstream (--streaming-authorization-verb=http-method); else create.
	StreamingVerbFromMethod bool
	// Settings are Kubelet's optional fields as plain values, defaults applied.
	Settings
}

// The values of --streaming-authorization-verb.
const (
	StreamingVerbCreate     = "create"
	StreamingVerbHTTPMethod = "http-method"
)

// hostname is swapped out by tests.
var hostname = os.Hostname

// Complete builds the Config: it loads --config (if given), applies defaults,
// then applies the flags that were set on fs, and validates the result. The
// returned error names every invalid field.
func (f *Flags) Complete(fs *pflag.FlagSet) (*Config, error) {
	kc := &kubeletconfigv1beta1.KubeletConfiguration{}
	if f.ConfigFile != "" {
		loaded, err := Load(f.ConfigFile)
		if err != nil {
			return nil, err
		}
		kc = loaded
	}
	SetDefaults(kc)
	if f.ConfigDir != "" {
		merged, err := MergeDropIns(kc, f.ConfigDir)
		if err != nil {
			return nil, err
		}
		kc = merged
	}
	for _, o := range f.overrides {
		if fs.Changed(o.flag) {
			o.apply(kc)
		}
	}
	if fs.Changed("feature-gates") {
		mergeFlagGates(kc, f.featureGates)
	}
	warnGates(kc.FeatureGates)
	// A partial --eviction-hard may need the missing defaults merged in.
	setEvictionDefaults(kc)
	f.applyLogging(fs, kc)
	logIgnoredCloudConfig(fs, f)
	if fs.Changed("pod-infra-container-image") {
		klog.InfoS("Flag --pod-infra-container-image only keeps that image from image garbage collection; the container runtime's configuration chooses the sandbox image",
			"image", f.PodInfraContainerImage)
	}

	nodeName, err := f.nodeName()
	if err != nil {
		return nil, err
	}
	cfg := &Config{
		Kubelet:               kc,
		ConfigFile:            f.ConfigFile,
		ConfigDir:             f.ConfigDir,
		ExternalCloudProvider: f.CloudProvider == CloudProviderExternal,
		RegisterUnschedulable: !f.deprecated.registerSchedulable,
		Kubeconfig:            f.Kubeconfig,
		BootstrapKubeconfig:   f.BootstrapKubeconfig,
		LockFile:              f.LockFile, ExitOnLockContention: f.ExitOnLockContention,
		CredentialProviderConfig: f.CredentialProviderConfig, CredentialProviderBinDir: f.CredentialProviderBinDir,
		RootDir:            f.RootDir,
		HostnameOverride:   f.HostnameOverride,
		NodeIP:             f.NodeIP,
		NodeName:           nodeName,
		RunOnce:            kc.RunOnce,
		NodeLabels:         maps.Clone(f.NodeLabels),
		Settings:           settingsOf(kc),
		RegisterWithTaints: kc.RegisterWithTaints,
		CertDir:            f.CertDir,
		ContainerGC:        f.ContainerGC,

		PodInfraContainerImage: f.PodInfraContainerImage,
		NodeUIPort:             f.NodeUIPort,
		NodeUIAddress:          f.NodeUIAddress,
		NoPodTimeline:          !f.PodTimeline,

		AllowInsecureAnonymousAPI: f.AllowInsecureAnonymousAPI,
		StreamingVerbFromMethod:   f.StreamingAuthorizationVerb == StreamingVerbHTTPMethod,
	}
	v := &validator{}
	v.oneOf("--streaming-authorization-verb", f.StreamingAuthorizationVerb, StreamingVerbCreate, StreamingVerbHTTPMethod)
	v.cloudProvider(f.CloudProvider)
	v.deprecatedFlags(fs, f)
	if err := errors.Join(Validate(kc), validateFlagsOnly(cfg), v.err()); err != nil {
		return nil, err
	}
	applyReservedSystemCPUs(kc)
	return cfg, nil
}

func (f *Flags) nodeName() (string, error) {
	name := f.HostnameOverride
	if strings.TrimSpace(name) == "" {
		h, err := hostname()
		if err != nil {
			return "", fmt.Errorf("finding the node name: %w (set --hostname-override)", err)
		}
		name = h
	}
	return strings.ToLower(strings.TrimSpace(name)), nil
}

// applyLogging keeps klog's verbosity and vmodule in step with logging.verbosity and
// logging.vmodule (the command line wins, otherwise the file's values are applied to klog),
// and flushes klog's buffer every logging.flushFrequency.
func (f *Flags) applyLogging(fs *pflag.FlagSet, kc *kubeletconfigv1beta1.KubeletConfiguration) {
	flag := fs.Lookup("v")
	if flag == nil || f.logFlags == nil {
		return
	}
	if every := kc.Logging.FlushFrequency.Duration.Duration; every > 0 {
		klog.StartFlushDaemon(every)
	}
	f.applyVModule(fs, kc)
	if fs.Changed("v") {
		if level, err := strconv.ParseUint(flag.Value.String(), 10, 32); err == nil {
			kc.Logging.Verbosity = logsapi.VerbosityLevel(level)
		}
		return
	}
	if kc.Logging.Verbosity > 0 {
		level := strconv.FormatUint(uint64(kc.Logging.Verbosity), 10)
		if err := f.logFlags.Set("v", level); err != nil {
			klog.ErrorS(err, "Could not apply logging.verbosity", "verbosity", level)
		}
	}
}

// applyVModule: --vmodule wins over logging.vmodule, which is applied to klog otherwise.
func (f *Flags) applyVModule(fs *pflag.FlagSet, kc *kubeletconfigv1beta1.KubeletConfiguration) {
	if fs.Lookup("vmodule") == nil {
		return
	}
	if fs.Changed("vmodule") {
		kc.Logging.VModule = nil
		if err := logsapi.VModuleConfigurationPflag(&kc.Logging.VModule).Set(fs.Lookup("vmodule").Value.String()); err != nil {
			klog.ErrorS(err, "Could not record --vmodule in logging.vmodule")
		}
		return
	}
	if len(kc.Logging.VModule) == 0 {
		return
	}
	value := logsapi.VModuleConfigurationPflag(&kc.Logging.VModule).String()
	if err := f.logFlags.Set("vmodule", value); err != nil {
		klog.ErrorS(err, "Could not apply logging.vmodule", "vmodule", value)
	}
}

// validateFlagsOnly checks the settings that exist only as flags.
func validateFlagsOnly(cfg *Config) error {
	v := &validator{}
	if cfg.RootDir == "" {
		v.add("--root-dir", "must not be empty")
	}
	for _, msg := range validation.IsDNS1123Subdomain(cfg.NodeName) {
		v.add("--hostname-override", "node name %q: %s", cfg.NodeName, msg)
	}
	v.nodeIPs(cfg.NodeIP)
	v.nodeLabels(cfg.NodeLabels)
	v.checkContainerGC(cfg.ContainerGC)
	if (cfg.CredentialProviderConfig == "") != (cfg.CredentialProviderBinDir == "") {
		v.add("--image-credential-provider-config", "and --image-credential-provider-bin-dir go together")
	}
	v.between("--node-ui-port", int64(cfg.NodeUIPort), 0, 65535)
	if cfg.NodeUIPort > 0 {
		v.ip("--node-ui-address", cfg.NodeUIAddress)
	}
	if cfg.ExitOnLockContention && cfg.LockFile == "" {
		v.add("--exit-on-lock-contention", "needs --lock-file")
	}
	if cfg.BootstrapKubeconfig != "" && cfg.Kubeconfig == "" {
		v.add("--bootstrap-kubeconfig", "needs --kubeconfig, the path the bootstrapped kubeconfig is written to")
	}
	if cfg.Kubelet.ServerTLSBootstrap && cfg.Kubeconfig == "" {
		v.add("serverTLSBootstrap", "needs --kubeconfig: a standalone node has no API server to request its serving certificate from")
	}
	if cfg.Kubelet.RotateCertificates && cfg.Kubeconfig == "" {
		v.add("rotateCertificates", "needs --kubeconfig: a standalone node has no API server to renew its certificate with")
	}
	v.checkAnonymousAPI(cfg)
	return v.err()
}
