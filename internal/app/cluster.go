package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	authnv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/internal/config"
	"github.com/nodelet/nodelet/internal/lib/kubeclient"
	"github.com/nodelet/nodelet/internal/lib/metrics"
	"github.com/nodelet/nodelet/internal/lib/version"
	"github.com/nodelet/nodelet/internal/node"
	"github.com/nodelet/nodelet/internal/node/certificates"
	"github.com/nodelet/nodelet/internal/pod"
	"github.com/nodelet/nodelet/internal/pod/status"
	"github.com/nodelet/nodelet/internal/pod/syncloop"
	"github.com/nodelet/nodelet/internal/podspec/objects"
	"github.com/nodelet/nodelet/internal/volumes"
	"github.com/nodelet/nodelet/internal/volumes/plugins"
)

// cluster holds what cluster mode adds: API clients, pod status and mirror pods in the API,
// and the Node with its Lease.
type cluster struct {
	cfg       *config.Config
	clients   *kubeclient.Clients
	apiStatus *status.APISyncer
	mirrors   *pod.MirrorClient
	// view is the Node as the node controller last saw it, made before everything that reads
	// it (the volume manager, admission, resizes, node shutdown, the CSI registrar) and before
	// the controller, which publishes into it (start).
	view *node.View
	// ready is closed once the node has a client certificate. TLS bootstrap runs in the
	// background, so the parts that need no API (static pods, the runtime, healthz) start
	// before it and the API parts (startAPI) after it.
	ready <-chan struct{}
	// deletes are the background deletions of orphaned mirror pods, joined at stop.
	deletes sync.WaitGroup
}

func newCluster(ctx context.Context, cfg *config.Config, pods *pod.Manager, comps *components) (*cluster, error) {
	metrics.RegisterClientMetrics() // before the first client: client-go takes one registration
	restCfg, identity, err := certificates.NewClientIdentity(certificates.ClientOptions{
		NodeName: cfg.NodeName, Kubeconfig: cfg.Kubeconfig, BootstrapKubeconfig: cfg.BootstrapKubeconfig,
		Store: certificates.Store{Dir: cfg.CertDir, Prefix: "kubelet-client"}, Rotate: cfg.Kubelet.RotateCertificates,
		NewClient: kubeclient.NewInterface,
	})
	if err != nil {
		return nil, err
	}
	clients, err := kubeclient.NewForConfig(restCfg, kubeclient.Limits{
		ContentType: cfg.Kubelet.ContentType, APIQPS: cfg.KubeAPIQPS, APIBurst: cfg.Kubelet.KubeAPIBurst,
		EventQPS: cfg.EventRecordQPS, EventBurst: cfg.Kubelet.EventBurst,
	})
	if err != nil {
		return nil, err
	}
	ready := make(chan struct{})
	close(ready)
	c := &cluster{
		cfg:       cfg,
		clients:   clients,
		apiStatus: status.NewAPISyncer(clients.API, currentMirror(pods)),
		mirrors:   pod.NewMirrorClient(clients.API, cfg.NodeName),
		ready:     ready,
		view:      node.NewView(),
	}
	comps.onStop(c.deletes.Wait)
	if identity != nil {
		comps.start("client certificate", identity.Run)
		metrics.WatchCertificate(metrics.CertClient, identity.Current)
		if cfg.BootstrapKubeconfig != "" {
			c.ready = identity.Ready()
		}
	}
	return c, nil
}

// startAPI runs an API component once the node has a client certificate.
func (c *cluster) startAPI(comps *components, name string, run func(context.Context) error) {
	comps.start(name, func(ctx context.Context) error {
		select {
		case <-c.ready:
			return run(ctx)
		case <-ctx.Done():
			return nil
		}
	})
}

// mirrorAPI refuses mirror pod calls, rather than send them anonymously, until the node has a
// client certificate; the static pod runs meanwhile and its next sync makes the mirror.
type mirrorAPI struct {
	*pod.MirrorClient
	ready <-chan struct{}
}

var errNoIdentity = errors.New("no client certificate yet (TLS bootstrap under way)")

func (m mirrorAPI) Create(ctx context.Context, static *v1.Pod) error {
	select {
	case <-m.ready:
		return m.MirrorClient.Create(ctx, static)
	default:
		return errNoIdentity
	}
}

func (m mirrorAPI) Delete(ctx context.Context, namespace, name string, uid *types.UID) error {
	select {
	case <-m.ready:
		return m.MirrorClient.Delete(ctx, namespace, name, uid)
	default:
		return errNoIdentity
	}
}

// loopHooks fills the API side's hooks into the sync loop's configuration, before the loop is made.
func (c *cluster) loopHooks(ctx context.Context, cfg *syncloop.Config) {
	cfg.MirrorChanged = c.apiStatus.MirrorChanged
	cfg.Reconciled = c.apiStatus.Reconcile
	cfg.DeleteMirror = func(mirror *v1.Pod) { c.deletes.Go(func() { c.mirrors.DeleteOrphan(ctx, mirror) }) }
}

// allocatable is the registered node's allocatable, for admission and resize; nil standalone
// (no check).
func (c *cluster) allocatable() func() v1.ResourceList {
	if c == nil {
		return nil
	}
	return c.view.Allocatable
}

// start registers the Node and starts the status, lease and pod-status loops (once the node
// has a client certificate).
func (c *cluster) start(ctx context.Context, a *agent, health func() error) {
	kc := c.cfg.Kubelet
	opts := node.Options{
		NodeName: c.cfg.NodeName, NodeIPs: splitNonEmpty(c.cfg.NodeIP), Labels: c.cfg.NodeLabels,
		Taints: c.cfg.RegisterWithTaints, Register: c.cfg.RegisterNode, Port: kc.Port,
		UpdateFrequency: kc.NodeStatusUpdateFrequency.Duration, ReportFrequency: kc.NodeStatusReportFrequency.Duration,
		LeaseDurationSeconds: kc.NodeLeaseDurationSeconds, MaxPods: maxPods(kc),
		KubeReserved: kc.KubeReserved, SystemReserved: kc.SystemReserved, EvictionHard: kc.EvictionHard,
		RootDir: c.cfg.RootDir, MaxImages: c.cfg.NodeStatusMaxImages,
		ProviderID: kc.ProviderID, ControllerAttachDetach: c.cfg.EnableControllerAttachDetach,
		ExternalCloudProvider: c.cfg.ExternalCloudProvider, Unschedulable: c.cfg.RegisterUnschedulable,
	}
	deps := node.Deps{
		Client: c.clients.API, Heartbeat: c.clients.Heartbeat, Recorder: a.recorder,
		Runtime: a.runtime, Images: a.images, Health: health, RuntimeFeatures: a.features.NodeStatus,
		VolumesInUse: a.volumes.VolumesInUse, VolumesInUseChanged: a.volumes.InUseChanges(),
		VolumesReportedInUse: a.volumes.MarkReportedInUse, Machine: a.host, View: c.view,
	}
	if a.devices != nil {
		deps.Devices, deps.DevicesChanged = a.devices.Resources, a.devices.Changes()
	}
	if a.eviction != nil {
		deps.Pressure = a.eviction.Pressure
	}
	ctl, err := node.New(opts, deps)
	if err != nil {
		klog.ErrorS(err, "Node controller not started; the node will not be registered")
		return
	}
	lease, err := node.NewLeaseController(opts, deps)
	if err != nil {
		klog.ErrorS(err, "Lease controller not started")
	} else {
		c.startAPI(a.comps, "node lease", lease.Run)
	}
	c.startAPI(a.comps, "node status", ctl.Run)
	c.startAPI(a.comps, "pod status", c.apiStatus.Run)
	klog.InfoS("Cluster mode", "node", c.cfg.NodeName, "kubeletVersion", version.KubeletVersion)
}

// currentMirror finds a static pod's mirror, but only one that reflects this version of it, so
// status never lands on a stale or deleting mirror.
func currentMirror(pods *pod.Manager) status.MirrorLookup {
	return func(static *v1.Pod) (*v1.Pod, bool) {
		m, ok := pods.MirrorOf(static)
		return m, ok && pod.MatchesStatic(m, static)
	}
}

func splitNonEmpty(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

// apiObjects serves the ConfigMaps and Secrets pods reference through the object manager
// (configMapAndSecretChangeDetectionStrategy), reads claims and requests service account
// tokens.
type apiObjects struct {
	*objects.Manager
	api kubeclient.Interface
}

// newAPIObjects starts the object manager, told of every pod change.
func (c *cluster) newAPIObjects(pods *pod.Manager, comps *components) *apiObjects {
	objs := objects.New(c.clients.API, string(c.cfg.Kubelet.ConfigMapAndSecretChangeDetectionStrategy))
	pods.OnChange(objs.PodChanged)
	c.startAPI(comps, "configmaps and secrets", objs.Run)
	return &apiObjects{Manager: objs, api: c.clients.API}
}

func (o apiObjects) GetPersistentVolumeClaim(ctx context.Context, namespace, name string) (*v1.PersistentVolumeClaim, error) {
	return o.api.CoreV1().PersistentVolumeClaims(namespace).Get(ctx, name, metav1.GetOptions{})
}

func (o apiObjects) GetPersistentVolume(ctx context.Context, name string) (*v1.PersistentVolume, error) {
	return o.api.CoreV1().PersistentVolumes().Get(ctx, name, metav1.GetOptions{})
}

var _ volumes.ClaimGetter = apiObjects{}

// MarkClaimResized records a volume grown on the node in its claim's status, as upstream's
// kubelet does: the new capacity, no FileSystemResizePending or Resizing condition, and no
// storage entry in allocatedResourceStatuses.
func (o apiObjects) MarkClaimResized(ctx context.Context, pvc *v1.PersistentVolumeClaim, capacity int64) error {
	conditions := []v1.PersistentVolumeClaimCondition{}
	for _, c := range pvc.Status.Conditions {
		if c.Type != v1.PersistentVolumeClaimFileSystemResizePending && c.Type != v1.PersistentVolumeClaimResizing {
			conditions = append(conditions, c)
		}
	}
	status := map[string]any{
		"capacity":   map[string]string{string(v1.ResourceStorage): resource.NewQuantity(capacity, resource.BinarySI).String()},
		"conditions": conditions,
	}
	if _, ok := pvc.Status.AllocatedResourceStatuses[v1.ResourceStorage]; ok {
		status["allocatedResourceStatuses"] = map[string]any{string(v1.ResourceStorage): nil}
	}
	patch, err := json.Marshal(map[string]any{"status": status})
	if err != nil {
		return err
	}
	_, err = o.api.CoreV1().PersistentVolumeClaims(pvc.Namespace).Patch(ctx, pvc.Name, types.MergePatchType, patch, metav1.PatchOptions{}, "status")
	if err != nil {
		return fmt.Errorf("recording the new size in claim %s/%s: %w", pvc.Namespace, pvc.Name, err)
	}
	return nil
}

var _ volumes.ClaimResizer = apiObjects{}

func (o apiObjects) CreateServiceAccountToken(ctx context.Context, namespace, name string, req *authnv1.TokenRequest) (*authnv1.TokenRequest, error) {
	return o.api.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name, req, metav1.CreateOptions{})
}

var _ plugins.TokenGetter = apiObjects{}

// podPullSecrets reads the pod's imagePullSecrets; one that cannot be read is logged, named in
// a FailedToRetrieveImagePullSecret event and skipped, as upstream does, and the pull goes on
// with the others.
func podPullSecrets(ctx context.Context, objs *objects.Manager, recorder record.EventRecorder, pod *v1.Pod) []v1.Secret {
	var out []v1.Secret
	var missing []string
	for _, ref := range pod.Spec.ImagePullSecrets {
		s, err := objs.GetSecret(ctx, pod.Namespace, ref.Name)
		if err != nil {
			klog.InfoS("Unable to retrieve pull secret, the image pull may not succeed.", "pod", klog.KObj(pod), "secret", ref.Name, "err", err)
			missing = append(missing, ref.Name)
			continue
		}
		out = append(out, *s)
	}
	if len(missing) > 0 {
		recorder.Eventf(pod, v1.EventTypeWarning, "FailedToRetrieveImagePullSecret",
			"Unable to retrieve some image pull secrets (%s); attempting to pull the image may not succeed.", strings.Join(missing, ", "))
	}
	return out
}
