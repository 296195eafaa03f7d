package config

import (
	goflag "flag"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/klog/v2"
	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"
)

type kubeletConfig = kubeletconfigv1beta1.KubeletConfiguration

// Flags holds the values bound to nodelet's command-line flags.
//
// Flags that mirror a KubeletConfiguration field are parsed into a private
// copy of the defaults and copied onto the loaded configuration only when they
// were given on the command line, so an unset flag never hides the file.
type Flags struct {
	ConfigFile               string
	Kubeconfig               string
	BootstrapKubeconfig      string
	LockFile                 string
	CredentialProviderConfig string
	CredentialProviderBinDir string
	ExitOnLockContention     bool
	RootDir                  string
	HostnameOverride         string
	NodeIP                   string
	CertDir                  string
	NodeLabels               map[string]string
	PodInfraContainerImage   string
	ContainerGC              ContainerGCPolicy // deprecated flags, see flags_gc.go
	NodeUIPort               int32
	NodeUIAddress            string
	PodTimeline              bool
	// AllowInsecureAnonymousAPI and StreamingAuthorizationVerb: see Config.
	AllowInsecureAnonymousAPI  bool
	StreamingAuthorizationVerb string

	// ConfigDir is --config-dir; CloudProvider is --cloud-provider.
	ConfigDir     string
	CloudProvider string

	featureGates map[string]bool // --feature-gates, merged over featureGates
	deprecated   deprecatedFlags

	values    *kubeletConfig
	overrides []override
	logFlags  *goflag.FlagSet
}

// override copies one flag's parsed value onto a configuration.
type override struct {
	flag  string
	apply func(kc *kubeletConfig)
}

func (f *Flags) addOverride(flag string, apply func(kc *kubeletConfig)) {
	f.overrides = append(f.overrides, override{flag: flag, apply: apply})
}

// registerFunc is the shape of pflag's typed XxxVar methods.
type registerFunc[T any] func(p *T, name string, value T, usage string)

// bindField binds a flag to a plain field of the configuration.
func bindField[T any](f *Flags, register registerFunc[T], name string, field func(*kubeletConfig) *T, usage string) {
	p := field(f.values)
	register(p, name, *p, usage)
	f.addOverride(name, func(kc *kubeletConfig) { *field(kc) = *p })
}

// bindPointer binds a flag to an optional (pointer) field of the configuration.
func bindPointer[T any](f *Flags, register registerFunc[T], name string, field func(*kubeletConfig) **T, usage string) {
	p := new(T)
	if def := *field(f.values); def != nil {
		*p = *def
	}
	register(p, name, *p, usage)
	f.addOverride(name, func(kc *kubeletConfig) {
		v := *p
		*field(kc) = &v
	})
}

// AddFlags binds every nodelet flag to fs and returns the values they fill.
func AddFlags(fs *pflag.FlagSet) *Flags {
	f := &Flags{values: &kubeletConfig{}}
	SetDefaults(f.values)

	addNodeletFlags(fs, f)
	addServerFlags(fs, f)
	addPodSourceFlags(fs, f)
	addNodeFlags(fs, f)
	addRuntimeFlags(fs, f)
	addResourceFlags(fs, f)
	addTopologyFlags(fs, f)
	addEvictionFlags(fs, f)
	addContainerGCFlags(fs, f)
	addUpstreamFlags(fs, f)
	f.logFlags = addLogFlags(fs)
	return f
}

// addNodeletFlags binds the flags that have no KubeletConfiguration field.
func addNodeletFlags(fs *pflag.FlagSet, f *Flags) {
	fs.StringVar(&f.ConfigFile, "config", "", "Path to a KubeletConfiguration file (YAML or JSON). Flags given on the command line override its values.")
	fs.StringVar(&f.Kubeconfig, "kubeconfig", "", "Path to a kubeconfig for reaching the API server. Without it nodelet runs standalone, serving static pods only.")
	fs.StringVar(&f.RootDir, "root-dir", DefaultRootDir, "Directory for nodelet's state: pod directories, volumes and plugins.")
	fs.StringVar(&f.CredentialProviderConfig, "image-credential-provider-config", "", "CredentialProviderConfig file (kubelet.config.k8s.io/v1) of the credential provider plugins to run for matching images.")
	fs.StringVar(&f.CredentialProviderBinDir, "image-credential-provider-bin-dir", "", "Directory holding the credential provider plugins the config names.")
	fs.StringVar(&f.LockFile, "lock-file", "", "File to hold an exclusive lock on while running, so two kubelets never share a node; nodelet waits for it at start.")
	fs.BoolVar(&f.ExitOnLockContention, "exit-on-lock-contention", false, "Exit (status 0) when another process opens --lock-file, letting a new kubelet take over.")
	fs.StringVar(&f.BootstrapKubeconfig, "bootstrap-kubeconfig", "", "Kubeconfig (usually a bootstrap token) to request a client certificate with when --kubeconfig is missing or its certificate expired; the certificate goes to --cert-dir and a kubeconfig using it to --kubeconfig.")
	fs.StringVar(&f.CertDir, "cert-dir", DefaultCertDir, "Directory holding the client certificates (kubelet-client-current.pem) and the serving certificate and key; the latter is ignored when --tls-cert-file and --tls-private-key-file are set.")
	fs.StringVar(&f.HostnameOverride, "hostname-override", "", "Node name to use instead of the machine's host name.")
	fs.StringVar(&f.NodeIP, "node-ip", "", "IP address (or comma-separated IPv4,IPv6 pair) to report for the node.")
	fs.StringToStringVar(&f.NodeLabels, "node-labels", nil, "Labels to put on the node when registering, as key=value pairs separated by commas.")
	fs.StringVar(&f.PodInfraContainerImage, "pod-infra-container-image", "", "Image that image garbage collection never removes; the container runtime's own configuration picks the sandbox image.")
	// nodelet's own: the upstream kubelet has no node page.
	fs.Int32Var(&f.NodeUIPort, "node-ui-port", 0, "nodelet only (not an upstream kubelet flag): port of the node page, plain HTTP with no authentication, at /ui/ (pods, their timelines, CPU and memory graphs, events); 0 turns it off. The HTTPS API, when served, has the same page at /ui/.")
	fs.BoolVar(&f.PodTimeline, "pod-timeline", true, "nodelet only (not an upstream kubelet flag): record each pod's lifecycle steps in memory (/debug/pods/{namespace}/{name}/timeline, nodelet explain, the node page's waterfall); false records none.")
	fs.StringVar(&f.NodeUIAddress, "node-ui-address", DefaultNodeUIAddress, "nodelet only (not an upstream kubelet flag): IP address the --node-ui-port listener binds to; anyone who can reach it sees the node's pods and events.")
	fs.BoolVar(&f.AllowInsecureAnonymousAPI, "allow-insecure-anonymous-api", false, "nodelet only (not an upstream kubelet flag): start even though the HTTPS API lets anonymous requests do anything (authentication.anonymous.enabled with authorization.mode AlwaysAllow) on an address beyond loopback, where anyone who reaches the port can run commands in every container. Without it nodelet refuses that configuration.")
	fs.StringVar(&f.StreamingAuthorizationVerb, "streaming-authorization-verb", StreamingVerbCreate, `nodelet only (not an upstream kubelet flag): the verb exec, attach, port-forward and run are authorized with on nodes/proxy. "create" whatever the HTTP method (a WebSocket upgrade is a GET, so with the method's verb whoever may only get nodes/proxy could run commands); "http-method" is the upstream kubelet's mapping (GET asks get, POST create).`)
}

func addServerFlags(fs *pflag.FlagSet, f *Flags) {
	bindPointer(f, fs.BoolVar, "enable-server", func(kc *kubeletConfig) **bool { return &kc.EnableServer }, "Serve the node's HTTPS API.")
	bindField(f, fs.StringVar, "address", func(kc *kubeletConfig) *string { return &kc.Address }, "IP address the HTTPS API listens on (0.0.0.0 or :: for all interfaces).")
	bindField(f, fs.Int32Var, "port", func(kc *kubeletConfig) *int32 { return &kc.Port }, "Port of the HTTPS API.")
	bindField(f, fs.Int32Var, "read-only-port", func(kc *kubeletConfig) *int32 { return &kc.ReadOnlyPort }, "Port of the unauthenticated read-only HTTP API; 0 turns it off.")
	bindPointer(f, fs.Int32Var, "healthz-port", func(kc *kubeletConfig) **int32 { return &kc.HealthzPort }, "Port of the /healthz endpoint; 0 turns it off.")
	bindField(f, fs.StringVar, "healthz-bind-address", func(kc *kubeletConfig) *string { return &kc.HealthzBindAddress }, "IP address the /healthz endpoint listens on.")
	bindField(f, fs.StringVar, "tls-cert-file", func(kc *kubeletConfig) *string { return &kc.TLSCertFile }, "Certificate (with any intermediates) served by the HTTPS API. When unset, a self-signed pair is kept in --cert-dir.")
	bindField(f, fs.StringVar, "tls-private-key-file", func(kc *kubeletConfig) *string { return &kc.TLSPrivateKeyFile }, "Private key matching --tls-cert-file.")
	bindField(f, fs.StringVar, "tls-min-version", func(kc *kubeletConfig) *string { return &kc.TLSMinVersion }, "Lowest TLS version accepted, e.g. VersionTLS12.")
	bindField(f, fs.StringSliceVar, "tls-cipher-suites", func(kc *kubeletConfig) *[]string { return &kc.TLSCipherSuites }, "Cipher suites the HTTPS API allows, by Go name; empty means Go's defaults.")
	bindField(f, fs.BoolVar, "rotate-server-certificates", func(kc *kubeletConfig) *bool { return &kc.ServerTLSBootstrap }, "Request the kubelet API's serving certificate through the API server (a kubernetes.io/kubelet-serving CSR, approved by the cluster's approver) and renew it (serverTLSBootstrap).")
	bindField(f, fs.BoolVar, "rotate-certificates", func(kc *kubeletConfig) *bool { return &kc.RotateCertificates }, "Renew the client certificate through the API server (a CertificateSigningRequest) at 70-90% of its lifetime, without a restart.")
	bindField(f, fs.StringVar, "client-ca-file", func(kc *kubeletConfig) *string { return &kc.Authentication.X509.ClientCAFile }, "CA bundle whose client certificates the HTTPS API trusts.")
	bindPointer(f, fs.BoolVar, "anonymous-auth", func(kc *kubeletConfig) **bool { return &kc.Authentication.Anonymous.Enabled }, "Let requests without credentials through as system:anonymous.")
	bindPointer(f, fs.BoolVar, "authentication-token-webhook", func(kc *kubeletConfig) **bool { return &kc.Authentication.Webhook.Enabled }, "Check bearer tokens with the API server's TokenReview API.")
	bindField(f, fs.DurationVar, "authentication-token-webhook-cache-ttl", func(kc *kubeletConfig) *time.Duration { return &kc.Authentication.Webhook.CacheTTL.Duration }, "How long TokenReview answers are cached.")
	mode := string(f.values.Authorization.Mode)
	fs.StringVar(&mode, "authorization-mode", mode, "How HTTPS API requests are authorized: AlwaysAllow, or Webhook (ask the API server with SubjectAccessReview).")
	f.addOverride("authorization-mode", func(kc *kubeletConfig) { kc.Authorization.Mode = kubeletconfigv1beta1.KubeletAuthorizationMode(mode) })
	bindField(f, fs.DurationVar, "authorization-webhook-cache-authorized-ttl", func(kc *kubeletConfig) *time.Duration { return &kc.Authorization.Webhook.CacheAuthorizedTTL.Duration }, "How long an 'allowed' webhook answer is cached.")
	bindField(f, fs.DurationVar, "authorization-webhook-cache-unauthorized-ttl", func(kc *kubeletConfig) *time.Duration { return &kc.Authorization.Webhook.CacheUnauthorizedTTL.Duration }, "How long a 'denied' webhook answer is cached.")
	bindPointer(f, fs.BoolVar, "enable-debugging-handlers", func(kc *kubeletConfig) **bool { return &kc.EnableDebuggingHandlers }, "Serve logs, exec, attach and port-forward endpoints.")
	bindField(f, fs.DurationVar, "streaming-connection-idle-timeout", func(kc *kubeletConfig) *time.Duration { return &kc.StreamingConnectionIdleTimeout.Duration }, "Accepted for compatibility; as in the upstream kubelet, streams are proxied to the runtime, whose stream server applies its own idle timeout.")
}

func addPodSourceFlags(fs *pflag.FlagSet, f *Flags) {
	bindField(f, fs.StringVar, "pod-manifest-path", func(kc *kubeletConfig) *string { return &kc.StaticPodPath }, "File or directory of static pod manifests to run.")
	bindField(f, fs.DurationVar, "file-check-frequency", func(kc *kubeletConfig) *time.Duration { return &kc.FileCheckFrequency.Duration }, "How often to rescan --pod-manifest-path.")
	bindField(f, fs.StringVar, "manifest-url", func(kc *kubeletConfig) *string { return &kc.StaticPodURL }, "URL serving static pod manifests to run.")
	fs.Var(&headerValue{headers: &f.values.StaticPodURLHeader}, "manifest-url-header", "HTTP header sent when fetching --manifest-url, as name:value; repeat the flag or separate pairs with commas.")
	f.addOverride("manifest-url-header", func(kc *kubeletConfig) { kc.StaticPodURLHeader = f.values.StaticPodURLHeader })
	bindField(f, fs.DurationVar, "http-check-frequency", func(kc *kubeletConfig) *time.Duration { return &kc.HTTPCheckFrequency.Duration }, "How often to refetch --manifest-url.")
	bindField(f, fs.DurationVar, "sync-frequency", func(kc *kubeletConfig) *time.Duration { return &kc.SyncFrequency.Duration }, "Longest time between two syncs of a running pod.")
	bindField(f, fs.BoolVar, "runonce", func(kc *kubeletConfig) *bool { return &kc.RunOnce }, "Start the static pods once, report how they did, and exit.")
	bindField(f, fs.Int32Var, "max-pods", func(kc *kubeletConfig) *int32 { return &kc.MaxPods }, "Most pods this node will run.")
	bindField(f, fs.Int32Var, "pods-per-core", func(kc *kubeletConfig) *int32 { return &kc.PodsPerCore }, "Most pods per CPU core; 0 means no per-core limit.")
}

func addNodeFlags(fs *pflag.FlagSet, f *Flags) {
	bindPointer(f, fs.BoolVar, "register-node", func(kc *kubeletConfig) **bool { return &kc.RegisterNode }, "Create the Node object in the API server when --kubeconfig is set.")
	fs.Var(&taintsValue{taints: &f.values.RegisterWithTaints}, "register-with-taints", "Taints to put on the node when registering, as key=value:Effect, separated by commas.")
	f.addOverride("register-with-taints", func(kc *kubeletConfig) { kc.RegisterWithTaints = f.values.RegisterWithTaints })
	bindField(f, fs.DurationVar, "node-status-update-frequency", func(kc *kubeletConfig) *time.Duration { return &kc.NodeStatusUpdateFrequency.Duration }, "How often the node's status is computed and, if changed, posted.")
	bindPointer(f, fs.Int32Var, "node-status-max-images", func(kc *kubeletConfig) **int32 { return &kc.NodeStatusMaxImages }, "Most images listed in the node's status; -1 lists all.")
	bindField(f, fs.StringSliceVar, "cluster-dns", func(kc *kubeletConfig) *[]string { return &kc.ClusterDNS }, "IP addresses of the cluster DNS servers, written into pods' resolv.conf.")
	bindField(f, fs.StringVar, "cluster-domain", func(kc *kubeletConfig) *string { return &kc.ClusterDomain }, "Cluster DNS domain added to pods' search paths.")
	bindPointer(f, fs.StringVar, "resolv-conf", func(kc *kubeletConfig) **string { return &kc.ResolverConfig }, "Host resolver file pods with dnsPolicy Default copy; empty disables that copy.")
	bindField(f, fs.StringVar, "pod-cidr", func(kc *kubeletConfig) *string { return &kc.PodCIDR }, "Not supported: must stay empty; the CNI configuration gives pods their IPs.")
	bindField(f, fs.StringVar, "provider-id", func(kc *kubeletConfig) *string { return &kc.ProviderID }, "Cloud provider's identity for this node.")
	bindField(f, fs.StringVar, "hairpin-mode", func(kc *kubeletConfig) *string { return &kc.HairpinMode }, "How pods can reach themselves through a service: promiscuous-bridge, hairpin-veth or none.")
	bindPointer(f, fs.Int32Var, "kube-api-qps", func(kc *kubeletConfig) **int32 { return &kc.KubeAPIQPS }, "Steady request rate to the API server.")
	bindField(f, fs.Int32Var, "kube-api-burst", func(kc *kubeletConfig) *int32 { return &kc.KubeAPIBurst }, "Short burst of requests allowed above --kube-api-qps.")
	bindField(f, fs.StringVar, "kube-api-content-type", func(kc *kubeletConfig) *string { return &kc.ContentType }, "Encoding used when talking to the API server.")
	bindPointer(f, fs.Int32Var, "event-qps", func(kc *kubeletConfig) **int32 { return &kc.EventRecordQPS }, "Events created per second; 0 means no limit.")
	bindField(f, fs.Int32Var, "event-burst", func(kc *kubeletConfig) *int32 { return &kc.EventBurst }, "Short burst of events allowed above --event-qps.")
}

func addRuntimeFlags(fs *pflag.FlagSet, f *Flags) {
	bindField(f, fs.StringVar, "container-runtime-endpoint", func(kc *kubeletConfig) *string { return &kc.ContainerRuntimeEndpoint }, "CRI socket of the container runtime.")
	bindField(f, fs.StringVar, "image-service-endpoint", func(kc *kubeletConfig) *string { return &kc.ImageServiceEndpoint }, "CRI image service socket for pulls, image GC and the image filesystem; empty means --container-runtime-endpoint.")
	bindField(f, fs.DurationVar, "runtime-request-timeout", func(kc *kubeletConfig) *time.Duration { return &kc.RuntimeRequestTimeout.Duration }, "Deadline for CRI calls other than long-running ones such as pulls and exec.")
	bindPointer(f, fs.BoolVar, "serialize-image-pulls", func(kc *kubeletConfig) **bool { return &kc.SerializeImagePulls }, "Pull one image at a time.")
	bindPointer(f, fs.Int32Var, "max-parallel-image-pulls", func(kc *kubeletConfig) **int32 { return &kc.MaxParallelImagePulls }, "Most image pulls running at once (needs --serialize-image-pulls=false).")
	bindPointer(f, fs.Int32Var, "registry-qps", func(kc *kubeletConfig) **int32 { return &kc.RegistryPullQPS }, "Image pulls started per second; 0 means no limit.")
	bindField(f, fs.Int32Var, "registry-burst", func(kc *kubeletConfig) *int32 { return &kc.RegistryBurst }, "Short burst of pulls allowed above --registry-qps.")
	bindPointer(f, fs.Int32Var, "image-gc-high-threshold", func(kc *kubeletConfig) **int32 { return &kc.ImageGCHighThresholdPercent }, "Disk usage percent at which unused images start being removed.")
	bindPointer(f, fs.Int32Var, "image-gc-low-threshold", func(kc *kubeletConfig) **int32 { return &kc.ImageGCLowThresholdPercent }, "Disk usage percent image removal brings usage back down to.")
	bindField(f, fs.DurationVar, "minimum-image-ttl-duration", func(kc *kubeletConfig) *time.Duration { return &kc.ImageMinimumGCAge.Duration }, "Youngest age at which an unused image may be removed.")
	bindField(f, fs.StringVar, "container-log-max-size", func(kc *kubeletConfig) *string { return &kc.ContainerLogMaxSize }, "Size at which a container's log file is rotated, e.g. 10Mi.")
	bindPointer(f, fs.Int32Var, "container-log-max-files", func(kc *kubeletConfig) **int32 { return &kc.ContainerLogMaxFiles }, "Log files kept per container, the live one included.")
	bindField(f, fs.StringVar, "volume-plugin-dir", func(kc *kubeletConfig) *string { return &kc.VolumePluginDir }, "Not supported: flex volumes are not; only the default directory is accepted.")
	bindField(f, fs.StringSliceVar, "allowed-unsafe-sysctls", func(kc *kubeletConfig) *[]string { return &kc.AllowedUnsafeSysctls }, "Unsafe sysctls (or name* patterns) pods may set.")
	bindPointer(f, fs.BoolVar, "seccomp-default", func(kc *kubeletConfig) **bool { return &kc.SeccompDefault }, "Give RuntimeDefault seccomp to pods and containers that name no profile (otherwise they run unconfined).")
}

func addResourceFlags(fs *pflag.FlagSet, f *Flags) {
	bindField(f, fs.StringVar, "cgroup-driver", func(kc *kubeletConfig) *string { return &kc.CgroupDriver }, "How cgroups are managed: cgroupfs or systemd. Must match the container runtime.")
	bindField(f, fs.StringVar, "cgroup-root", func(kc *kubeletConfig) *string { return &kc.CgroupRoot }, "Parent cgroup of the pod cgroups.")
	bindPointer(f, fs.BoolVar, "cgroups-per-qos", func(kc *kubeletConfig) **bool { return &kc.CgroupsPerQOS }, "Group pods under one cgroup per QoS class.")
	bindField(f, fs.StringVar, "kubelet-cgroups", func(kc *kubeletConfig) *string { return &kc.KubeletCgroups }, "Cgroup to move nodelet itself into.")
	bindField(f, fs.StringVar, "system-cgroups", func(kc *kubeletConfig) *string { return &kc.SystemCgroups }, "Cgroup for host processes not otherwise placed.")
	bindField(f, fs.StringSliceVar, "enforce-node-allocatable", func(kc *kubeletConfig) *[]string { return &kc.EnforceNodeAllocatable }, "Which reservations to enforce with cgroups: pods, system-reserved, kube-reserved, or none.")
	bindField(f, fs.StringToStringVar, "system-reserved", func(kc *kubeletConfig) *map[string]string { return &kc.SystemReserved }, "Resources kept for the operating system, e.g. cpu=100m,memory=256Mi.")
	bindField(f, fs.StringToStringVar, "kube-reserved", func(kc *kubeletConfig) *map[string]string { return &kc.KubeReserved }, "Resources kept for Kubernetes node daemons, e.g. cpu=100m,memory=256Mi.")
	bindField(f, fs.StringVar, "system-reserved-cgroup", func(kc *kubeletConfig) *string { return &kc.SystemReservedCgroup }, "Cgroup enforcing --system-reserved.")
	bindField(f, fs.StringVar, "kube-reserved-cgroup", func(kc *kubeletConfig) *string { return &kc.KubeReservedCgroup }, "Cgroup enforcing --kube-reserved.")
	bindPointer(f, fs.BoolVar, "fail-swap-on", func(kc *kubeletConfig) **bool { return &kc.FailSwapOn }, "Refuse to start when swap is on.")
	bindPointer(f, fs.Int64Var, "pod-max-pids", func(kc *kubeletConfig) **int64 { return &kc.PodPidsLimit }, "Most processes in one pod; -1 means no limit.")
	bindField(f, fs.Int64Var, "max-open-files", func(kc *kubeletConfig) *int64 { return &kc.MaxOpenFiles }, "Open-file limit for the nodelet process.")
	bindPointer(f, fs.Int32Var, "oom-score-adj", func(kc *kubeletConfig) **int32 { return &kc.OOMScoreAdj }, "OOM score adjustment of the nodelet process, from -1000 to 1000.")
	bindField(f, fs.StringVar, "cpu-manager-policy", func(kc *kubeletConfig) *string { return &kc.CPUManagerPolicy }, "CPU manager policy: none, or static (exclusive CPUs for Guaranteed containers asking for whole CPUs).")
	bindField(f, fs.StringToStringVar, "cpu-manager-policy-options", func(kc *kubeletConfig) *map[string]string { return &kc.CPUManagerPolicyOptions }, "Options of the static CPU manager policy: full-pcpus-only=true, distribute-cpus-across-numa=true, strict-cpu-reservation=true (beta options need the CPUManagerPolicyBetaOptions feature gate, on by default).")
	bindField(f, fs.DurationVar, "cpu-manager-reconcile-period", func(kc *kubeletConfig) *time.Duration { return &kc.CPUManagerReconcilePeriod.Duration }, "How often the static CPU manager brings running containers' cpusets in line.")
	bindField(f, fs.StringVar, "reserved-cpus", func(kc *kubeletConfig) *string { return &kc.ReservedSystemCPUs }, "CPUs kept from pods' exclusive use and counted as the node's whole CPU reservation, e.g. 0,1 (reservedSystemCPUs).")
	bindPointer(f, fs.BoolVar, "cpu-cfs-quota", func(kc *kubeletConfig) **bool { return &kc.CPUCFSQuota }, "Enforce containers' and pods' CPU limits with a CFS quota; false leaves them to CPU shares.")
	bindPointer(f, fs.BoolVar, "local-storage-capacity-isolation", func(kc *kubeletConfig) **bool { return &kc.LocalStorageCapacityIsolation }, "Account and limit pods' ephemeral storage.")
	bindField(f, fs.BoolVar, "protect-kernel-defaults", func(kc *kubeletConfig) *bool { return &kc.ProtectKernelDefaults }, "Fail when kernel tunables differ from what nodelet expects instead of changing them.")
	addMemoryManagerFlags(fs, f)
}

func addEvictionFlags(fs *pflag.FlagSet, f *Flags) {
	fs.Var(&thresholdValue{thresholds: &f.values.EvictionHard}, "eviction-hard", "Thresholds that evict pods at once, e.g. memory.available<100Mi,nodefs.available<10%.")
	f.addOverride("eviction-hard", func(kc *kubeletConfig) { kc.EvictionHard = f.values.EvictionHard })
	fs.Var(&thresholdValue{thresholds: &f.values.EvictionSoft}, "eviction-soft", "Thresholds that evict pods after their grace period, e.g. memory.available<300Mi.")
	f.addOverride("eviction-soft", func(kc *kubeletConfig) { kc.EvictionSoft = f.values.EvictionSoft })
	bindField(f, fs.StringToStringVar, "eviction-soft-grace-period", func(kc *kubeletConfig) *map[string]string { return &kc.EvictionSoftGracePeriod }, "How long each soft threshold must hold before evicting, e.g. memory.available=1m30s.")
	bindField(f, fs.StringToStringVar, "eviction-minimum-reclaim", func(kc *kubeletConfig) *map[string]string { return &kc.EvictionMinimumReclaim }, "Least amount each eviction must free, e.g. imagefs.available=2Gi.")
	bindField(f, fs.Int32Var, "eviction-max-pod-grace-period", func(kc *kubeletConfig) *int32 { return &kc.EvictionMaxPodGracePeriod }, "Longest termination grace period given to pods evicted by a soft threshold.")
	bindField(f, fs.DurationVar, "eviction-pressure-transition-period", func(kc *kubeletConfig) *time.Duration { return &kc.EvictionPressureTransitionPeriod.Duration }, "How long a pressure condition stays set after the pressure is gone.")
	bindField(f, fs.BoolVar, "kernel-memcg-notification", func(kc *kubeletConfig) *bool { return &kc.KernelMemcgNotification }, "Have the kernel signal memory thresholds crossed (cgroup v1) instead of waiting for the next 10s poll.")
}

// addLogFlags exposes klog's -v and --vmodule through fs and returns the Go
// flag set that owns them.
func addLogFlags(fs *pflag.FlagSet) *goflag.FlagSet {
	gfs := goflag.NewFlagSet("klog", goflag.ContinueOnError)
	klog.InitFlags(gfs)
	usage := map[string]string{
		"v":       "Log verbosity: higher numbers log more detail.",
		"vmodule": "Per-file verbosity, as pattern=N pairs separated by commas.",
	}
	for _, name := range []string{"v", "vmodule"} {
		fs.AddGoFlag(gfs.Lookup(name))
		fs.Lookup(name).Usage = usage[name]
	}
	return gfs
}
