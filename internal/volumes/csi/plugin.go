package csi

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	authnv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/internal/lib/fsutil"
	"github.com/nodelet/nodelet/internal/volumes"
	"github.com/nodelet/nodelet/internal/volumes/mount"
	"github.com/nodelet/nodelet/internal/volumes/tokens"
)

// PluginName is the CSI plugin's directory under a pod's volumes, as upstream names it.
const PluginName = "kubernetes.io~csi"

// API reads what setting up a CSI volume needs from the API server.
type API interface {
	// CSIDriver returns the driver's CSIDriver object, nil when there is none.
	CSIDriver(ctx context.Context, name string) (*storagev1.CSIDriver, error)
	VolumeAttachment(ctx context.Context, name string) (*storagev1.VolumeAttachment, error)
	Secret(ctx context.Context, namespace, name string) (*v1.Secret, error)
	// CreateServiceAccountToken serves CSIDrivers' tokenRequests.
	CreateServiceAccountToken(ctx context.Context, namespace, serviceAccount string, req *authnv1.TokenRequest) (*authnv1.TokenRequest, error)
}

// Plugin names the volumes the attach/detach controller attaches (see InUseName).
var _ volumes.Attachable = (*Plugin)(nil)

// Plugin sets up CSI volumes through the registered drivers.
type Plugin struct {
	rootDir, nodeName string
	drivers           *Drivers
	api               API // nil in standalone mode
	mounter           mount.Mounter
	// attachTimeout bounds the wait for a VolumeAttachment to be attached.
	attachTimeout time.Duration
	// tokens are the service account tokens drivers ask for (tokenRequests).
	tokens *tokens.Cache
	// csiDrivers caches the CSIDriver objects for csiDriverTTL: every pod sync asks
	// whether a mounted volume is to be published again.
	csiDriversMu sync.Mutex
	csiDrivers   map[string]cachedCSIDriver
	// locks holds a mutex per driver and volume handle: pods sharing a volume stage, publish,
	// unpublish and unstage it one at a time, so an unstage never races a new publish.
	locks sync.Map
}

func (p *Plugin) lock(driver, handle string) func() {
	m, _ := p.locks.LoadOrStore(driver+"\x00"+handle, &sync.Mutex{})
	mu := m.(*sync.Mutex)
	mu.Lock()
	return mu.Unlock
}

// NewPlugin sets up volumes under rootDir through drivers; api is nil in standalone mode,
// where only drivers that need no attaching and no CSIDriver object can be used.
func NewPlugin(rootDir, nodeName string, drivers *Drivers, api API, mounter mount.Mounter) *Plugin {
	if mounter == nil {
		mounter = mount.Host{}
	}
	p := &Plugin{rootDir: rootDir, nodeName: nodeName, drivers: drivers, api: api, mounter: mounter,
		attachTimeout: 2 * time.Minute, csiDrivers: map[string]cachedCSIDriver{}, tokens: tokens.NewCache(nil)}
	if api != nil {
		p.tokens = tokens.NewCache(api)
	}
	return p
}

// RefreshOnSync: every sync of a pod sets its CSI volumes up again, so the volumes of drivers
// that ask for it (requiresRepublish) are published again; the others stay as they are.
func (p *Plugin) RefreshOnSync() bool { return true }

func (p *Plugin) Name() string { return PluginName }

func (p *Plugin) CanSetUp(s *volumes.Spec) bool {
	return s.Volume.CSI != nil || (s.PV != nil && s.PV.Spec.CSI != nil)
}

// stagingPath is where a driver stages a volume once for the node, as upstream lays it out.
func (p *Plugin) stagingPath(driver, handle string) string {
	return filepath.Join(p.rootDir, "plugins", "kubernetes.io", "csi", driver, fmt.Sprintf("%x", sha256.Sum256([]byte(handle))), "globalmount")
}

// SetUp stages the volume (when the driver stages) and publishes it at dir/mount. A volume
// whose target is mounted already (found after a restart) is left as it is.
func (p *Plugin) SetUp(ctx context.Context, pod *v1.Pod, s *volumes.Spec, dir string) (volumes.Mount, error) {
	src := sourceOf(pod, s)
	target := targetIn(dir, src.block)
	republish := false
	if mounted, _ := p.mounter.IsMountPoint(target); mounted {
		if !p.requiresRepublish(ctx, src.driver) {
			inUse, err := p.InUseName(ctx, pod, s)
			if err != nil {
				inUse = src.inUseName() // keep it listed: the controller then leaves it attached
			}
			return volumes.Mount{Path: target, ReadOnly: src.readOnly, Block: src.block, InUse: inUse, SELinuxRelabel: relabels(src, target)}, nil
		}
		republish = true
	}
	defer p.lock(src.driver, src.handle)()
	d, err := p.drivers.get(src.driver)
	if err != nil {
		return volumes.Mount{}, fmt.Errorf("kubernetes.io/csi: mounter.SetUpAt failed to get CSI client: %w", err)
	}
	drv, err := p.csiDriver(ctx, src)
	if err != nil {
		return volumes.Mount{}, err
	}
	publishContext, attachmentID, err := p.attached(ctx, src, drv)
	if err != nil {
		return volumes.Mount{}, err
	}
	data := volData{SpecVolID: src.specName, VolumeHandle: src.handle, DriverName: src.driver, NodeName: p.nodeName,
		AttachmentID: attachmentID, VolumeLifecycleMode: lifecycleMode(src.ephemeral)}
	if src.block {
		data.VolumeMode = string(v1.PersistentVolumeBlock)
	}
	if err := writeVolData(dir, data); err != nil {
		return volumes.Mount{}, fmt.Errorf("kubernetes.io/csi: failed to save volume info data: %w", err)
	}
	mountGroup := delegatedGroup(pod, d, src)
	staging := ""
	if d.caps[csipb.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME] && !src.ephemeral {
		staging = p.stagingPath(src.driver, src.handle)
		if !republish {
			if err := p.stage(ctx, d, src, data, publishContext, mountGroup); err != nil {
				return volumes.Mount{}, err
			}
		}
	}
	req := &csipb.NodePublishVolumeRequest{
		VolumeId: src.handle, PublishContext: publishContext, StagingTargetPath: staging, TargetPath: target,
		VolumeCapability: src.capability(mountGroup), Readonly: src.readOnly, VolumeContext: volumeContext(pod, src, drv),
	}
	if err := p.publish(ctx, pod, d, drv, src, req); err != nil {
		return volumes.Mount{}, err
	}
	klog.V(2).InfoS("Published CSI volume", "pod", klog.KObj(pod), "driver", src.driver, "volumeHandle", src.handle, "target", target)
	mnt := volumes.Mount{Path: target, ReadOnly: src.readOnly, Block: src.block, SELinuxRelabel: relabels(src, target)}
	if needsAttaching(src, drv) {
		mnt.InUse = src.inUseName()
	}
	return mnt, nil
}

// relabels tells whether the runtime should relabel the published volume on an SELinux host:
// as upstream, when it is writable (managed) and its filesystem carries labels.
func relabels(src source, target string) bool {
	return !src.readOnly && !src.block && mount.SELinuxSupported(mount.Mountinfo, target)
}

// InUseName names a volume the attach/detach controller attaches (a persistent volume whose
// driver needs attaching) in the node's volumesInUse; the volume manager sets it up only once
// the node has reported it there. Other volumes have no name.
func (p *Plugin) InUseName(ctx context.Context, pod *v1.Pod, s *volumes.Spec) (v1.UniqueVolumeName, error) {
	src := sourceOf(pod, s)
	if src.ephemeral {
		return "", nil
	}
	drv, err := p.cachedCSIDriver(ctx, src.driver)
	if err != nil {
		return "", fmt.Errorf("kubernetes.io/csi: reading CSIDriver %s: %w", src.driver, err)
	}
	if !needsAttaching(src, drv) {
		return "", nil
	}
	return src.inUseName(), nil
}

// needsAttaching: a persistent volume whose driver has no CSIDriver object or one that does
// not say attachRequired false, as upstream decides.
func needsAttaching(src source, drv *storagev1.CSIDriver) bool {
	return !src.ephemeral && (drv == nil || drv.Spec.AttachRequired == nil || *drv.Spec.AttachRequired)
}

// publish completes req with the tokens and secrets the driver asks for, publishes, and
// applies the pod's fsGroup when the driver's policy says so and the driver did not take
// it in the request (VOLUME_MOUNT_GROUP).
func (p *Plugin) publish(ctx context.Context, pod *v1.Pod, d *driver, drv *storagev1.CSIDriver, src source, req *csipb.NodePublishVolumeRequest) error {
	if err := p.addTokens(ctx, pod, drv, req.VolumeContext); err != nil {
		return err
	}
	var err error
	if req.Secrets, err = p.secrets(ctx, src.publishSecret); err != nil {
		return err
	}
	if err := d.client.publish(ctx, req); err != nil {
		return fmt.Errorf("kubernetes.io/csi: mounter.SetupAt failed: %w", err)
	}
	delegated := req.GetVolumeCapability().GetMount().GetVolumeMountGroup() != ""
	if group := fsGroupOf(pod); group != nil && !delegated && !src.readOnly && !src.block && src.appliesFSGroup(drv) {
		if err := volumes.SetOwnership(req.TargetPath, *group, pod.Spec.SecurityContext.FSGroupChangePolicy, false); err != nil {
			return fmt.Errorf("kubernetes.io/csi: mounter.SetupAt failed to set fsGroup ownership: %w", err)
		}
	}
	return nil
}

// csiDriver reads the driver's CSIDriver object and checks the volume's lifecycle mode is
// one it supports (a driver without one supports persistent volumes only).
func (p *Plugin) csiDriver(ctx context.Context, src source) (*storagev1.CSIDriver, error) {
	drv, err := p.cachedCSIDriver(ctx, src.driver)
	if err != nil {
		return nil, fmt.Errorf("kubernetes.io/csi: reading CSIDriver %s: %w", src.driver, err)
	}
	modes := []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecyclePersistent}
	if drv != nil && len(drv.Spec.VolumeLifecycleModes) > 0 {
		modes = drv.Spec.VolumeLifecycleModes
	}
	want := storagev1.VolumeLifecycleMode(lifecycleMode(src.ephemeral))
	if !slices.Contains(modes, want) {
		return nil, fmt.Errorf("volume mode %q not supported by driver %s (only supports %q)", want, src.driver, modes)
	}
	return drv, nil
}

// attached waits, for a persistent volume whose driver needs attaching, until its
// VolumeAttachment is attached, and returns the attachment's metadata for the node calls.
func (p *Plugin) attached(ctx context.Context, src source, drv *storagev1.CSIDriver) (map[string]string, string, error) {
	if !needsAttaching(src, drv) {
		return nil, "", nil
	}
	if p.api == nil {
		return nil, "", fmt.Errorf("kubernetes.io/csi: driver %s needs attaching, which needs the API server; nodelet runs standalone", src.driver)
	}
	name := attachmentName(src.handle, src.driver, p.nodeName)
	ctx, cancel := context.WithTimeout(ctx, p.attachTimeout)
	defer cancel()
	// The attacher marks it within a second or so: look often at first.
	poll := wait.Backoff{Duration: 100 * time.Millisecond, Factor: 2, Cap: time.Second, Steps: math.MaxInt32}
	var metadata map[string]string
	var lastErr error
	done := func(ctx context.Context) (bool, error) {
		va, err := p.api.VolumeAttachment(ctx, name)
		switch {
		case err != nil:
			lastErr = err
		case va.DeletionTimestamp != nil:
			return false, fmt.Errorf("volume attachment %s is being deleted", name)
		case va.Status.Attached:
			metadata = va.Status.AttachmentMetadata
			return true, nil
		case va.Status.AttachError != nil:
			lastErr = fmt.Errorf("attachment %s failed: %s", name, va.Status.AttachError.Message)
		default:
			lastErr = nil
		}
		return false, nil
	}
	err := poll.DelayFunc().Until(ctx, true, true, done)
	switch {
	case err == nil:
		return metadata, name, nil
	case ctx.Err() == nil:
		return nil, "", err // being deleted
	case lastErr == nil:
		lastErr = errors.New("not attached yet")
	}
	return nil, "", fmt.Errorf("kubernetes.io/csi: attacher.WaitForAttach failed for volume %s (VolumeAttachment %s): %w", src.handle, name, lastErr)
}

// stage stages the volume once for the node (NodeStageVolume is idempotent), keeping a
// vol_data.json next to the staging path as upstream does.
func (p *Plugin) stage(ctx context.Context, d *driver, src source, data volData, publishContext map[string]string, mountGroup string) error {
	staging := p.stagingPath(src.driver, src.handle)
	if err := writeVolData(filepath.Dir(staging), data); err != nil {
		return fmt.Errorf("kubernetes.io/csi: failed to save volume info data: %w", err)
	}
	req := &csipb.NodeStageVolumeRequest{
		VolumeId: src.handle, PublishContext: publishContext, StagingTargetPath: staging,
		VolumeCapability: src.capability(mountGroup), VolumeContext: src.attributes,
	}
	var err error
	if req.Secrets, err = p.secrets(ctx, src.stageSecret); err != nil {
		return err
	}
	if err := d.client.stage(ctx, req); err != nil {
		return fmt.Errorf("kubernetes.io/csi: attacher.MountDevice failed: %w", err)
	}
	return nil
}

// volumeContext is the volume's attributes plus, when the driver asks (podInfoOnMount) or
// the volume is inline, the pod's identity under upstream's keys.
func volumeContext(pod *v1.Pod, src source, drv *storagev1.CSIDriver) map[string]string {
	podInfo := drv != nil && drv.Spec.PodInfoOnMount != nil && *drv.Spec.PodInfoOnMount
	ctx := maps.Clone(src.attributes) // the PV's own map must not change
	if ctx == nil {
		ctx = map[string]string{}
	}
	if !podInfo && !src.ephemeral {
		return ctx
	}
	if podInfo {
		ctx["csi.storage.k8s.io/pod.name"] = pod.Name
		ctx["csi.storage.k8s.io/pod.namespace"] = pod.Namespace
		ctx["csi.storage.k8s.io/pod.uid"] = string(pod.UID)
		ctx["csi.storage.k8s.io/serviceAccount.name"] = pod.Spec.ServiceAccountName
	}
	ctx["csi.storage.k8s.io/ephemeral"] = fmt.Sprint(src.ephemeral)
	return ctx
}

func (p *Plugin) secrets(ctx context.Context, ref *v1.SecretReference) (map[string]string, error) {
	if ref == nil {
		return nil, nil
	}
	if p.api == nil {
		return nil, fmt.Errorf("kubernetes.io/csi: secret %s/%s needs the API server; nodelet runs standalone", ref.Namespace, ref.Name)
	}
	s, err := p.api.Secret(ctx, ref.Namespace, ref.Name)
	if err != nil {
		return nil, fmt.Errorf("kubernetes.io/csi: failed to find the secret %s in the namespace %s with error: %w", ref.Name, ref.Namespace, err)
	}
	out := map[string]string{}
	for k, v := range s.Data {
		out[k] = string(v)
	}
	return out, nil
}

// delegatedGroup is the pod's fsGroup for a driver that applies it itself at mount time
// (node capability VOLUME_MOUNT_GROUP): the stage and publish calls carry it, and the
// volume's fsGroupPolicy and the pod's fsGroupChangePolicy no longer apply, as upstream.
func delegatedGroup(pod *v1.Pod, d *driver, src source) string {
	group := fsGroupOf(pod)
	if group == nil || src.block || !d.caps[csipb.NodeServiceCapability_RPC_VOLUME_MOUNT_GROUP] {
		return ""
	}
	return strconv.FormatInt(*group, 10)
}

func fsGroupOf(pod *v1.Pod) *int64 {
	if sc := pod.Spec.SecurityContext; sc != nil {
		return sc.FSGroup
	}
	return nil
}

// TearDown unpublishes the volume at dir/mount and, when no other pod's volume uses its
// staging path, unstages it. What to call comes from vol_data.json, so it works for pods
// long gone and after a restart.
func (p *Plugin) TearDown(ctx context.Context, uid types.UID, dir string) error {
	ctx, cancel := context.WithTimeout(ctx, 2*callTimeout)
	defer cancel()
	data, err := readVolData(dir)
	if errors.Is(err, os.ErrNotExist) {
		// Set-up never reached the driver: nothing is published.
		return p.removeDir(dir)
	}
	if err != nil {
		return err
	}
	defer p.lock(data.DriverName, data.VolumeHandle)()
	d, err := p.drivers.get(data.DriverName)
	if err != nil {
		return fmt.Errorf("kubernetes.io/csi: Unmounter.TearDownAt failed to get CSI client: %w", err)
	}
	target := targetIn(dir, data.VolumeMode == string(v1.PersistentVolumeBlock))
	if err := d.client.unpublish(ctx, data.VolumeHandle, target); err != nil {
		return fmt.Errorf("kubernetes.io/csi: Unmounter.TearDownAt failed: %w", err)
	}
	if err := p.removeDir(dir); err != nil {
		return err
	}
	p.tokens.Forget(uid)
	klog.V(2).InfoS("Unpublished CSI volume", "podUID", uid, "driver", data.DriverName, "volumeHandle", data.VolumeHandle)
	if data.VolumeLifecycleMode == string(storagev1.VolumeLifecycleEphemeral) || !d.caps[csipb.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME] {
		return nil
	}
	return p.unstageUnused(ctx, d, data)
}

// removeDir removes a volume's directory once nothing is mounted at or below it: removing a
// live mount's content would lose data.
func (p *Plugin) removeDir(dir string) error {
	points, err := p.mounter.MountsUnder(dir)
	if err != nil {
		return err
	}
	if len(points) > 0 {
		return fmt.Errorf("kubernetes.io/csi: %s is still mounted; not removing it", points[0])
	}
	return fsutil.RemoveAllIn(filepath.Dir(dir), filepath.Base(dir))
}

// unstageUnused unstages the volume unless another pod's volume still uses it.
func (p *Plugin) unstageUnused(ctx context.Context, d *driver, data volData) error {
	users, err := filepath.Glob(filepath.Join(p.rootDir, "pods", "*", "volumes", PluginName, "*", volDataFile))
	if err != nil {
		return err
	}
	for _, f := range users {
		other, err := readVolData(filepath.Dir(f))
		if err == nil && other.DriverName == data.DriverName && other.VolumeHandle == data.VolumeHandle {
			return nil
		}
	}
	staging := p.stagingPath(data.DriverName, data.VolumeHandle)
	if _, err := os.Stat(filepath.Dir(staging)); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err := d.client.unstage(ctx, data.VolumeHandle, staging); err != nil {
		return fmt.Errorf("kubernetes.io/csi: attacher.UnmountDevice failed: %w", err)
	}
	klog.V(2).InfoS("Unstaged CSI volume", "driver", data.DriverName, "volumeHandle", data.VolumeHandle)
	return p.removeDir(filepath.Dir(staging))
}

// ExpandMounted grows a published volume to its PersistentVolume's capacity with
// NodeExpandVolume; a driver without the node's EXPAND_VOLUME capability needs no node step.
func (p *Plugin) ExpandMounted(ctx context.Context, s *volumes.Spec, dir string) error {
	src := sourceOf(nil, s)
	defer p.lock(src.driver, src.handle)()
	d, err := p.drivers.get(src.driver)
	if err != nil {
		return fmt.Errorf("kubernetes.io/csi: NodeExpandVolume failed to get CSI client: %w", err)
	}
	if !d.caps[csipb.NodeServiceCapability_RPC_EXPAND_VOLUME] {
		return nil
	}
	size := s.PV.Spec.Capacity[v1.ResourceStorage]
	req := &csipb.NodeExpandVolumeRequest{
		VolumeId: src.handle, VolumePath: targetIn(dir, src.block),
		CapacityRange: &csipb.CapacityRange{RequiredBytes: size.Value()}, VolumeCapability: src.capability(""),
	}
	if d.caps[csipb.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME] {
		req.StagingTargetPath = p.stagingPath(src.driver, src.handle)
	}
	if err := d.client.expand(ctx, req); err != nil {
		return fmt.Errorf("kubernetes.io/csi: NodeExpandVolume failed: %w", err)
	}
	return nil
}
