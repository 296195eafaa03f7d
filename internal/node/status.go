package node

import (
	"context"
	"fmt"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/internal/host/machine"
	"github.com/nodelet/nodelet/internal/lib/version"
)

// statusRetries is how many quick attempts one tick makes before waiting for the next.
const statusRetries = 5

// updateStatus posts the node status if it changed or is due, retrying a few times.
func (c *Controller) updateStatus(ctx context.Context) {
	for attempt := 0; attempt < statusRetries; attempt++ {
		err := c.tryUpdateStatus(ctx, attempt)
		if err == nil {
			return
		}
		if ctx.Err() != nil {
			return
		}
		klog.ErrorS(err, "Error updating node status, will retry", "node", c.opts.NodeName, "attempt", attempt+1)
		if attempt > 0 && c.deps.OnRepeatedHeartbeatFailure != nil {
			c.deps.OnRepeatedHeartbeatFailure()
		}
		// The first read may come from a cache that has not seen the Node yet; a fresh read that
		// also misses means someone deleted it.
		if attempt > 0 && apierrors.IsNotFound(err) {
			klog.InfoS("The Node was deleted from the API server; restart nodelet to register it again", "node", c.opts.NodeName)
			return
		}
	}
	klog.ErrorS(nil, "Unable to update node status, waiting for the next update", "node", c.opts.NodeName,
		"retries", statusRetries, "next", c.opts.UpdateFrequency)
}

// tryUpdateStatus reads the Node, recomputes its status and patches it when it changed or
// ReportFrequency passed since the last report. The first attempt may read from the API
// server's cache; retries read the latest.
func (c *Controller) tryUpdateStatus(ctx context.Context, attempt int) error {
	var volumes []v1.UniqueVolumeName
	if c.deps.VolumesInUse != nil {
		volumes = c.deps.VolumesInUse()
	}
	get := metav1.GetOptions{}
	// A cached Node may predate the last update; a changed volume list is diffed against the
	// latest one, or the patch could leave out a name the volume manager waits for.
	if attempt == 0 && slices.Equal(volumes, c.postedVolumes) {
		get.ResourceVersion = "0"
	}
	old, err := c.deps.Heartbeat.CoreV1().Nodes().Get(ctx, c.opts.NodeName, get)
	if err != nil {
		return fmt.Errorf("getting node: %w", err)
	}
	now := c.deps.Clock.Now()
	desired := old.DeepCopy()
	c.setStatus(ctx, desired, now)
	if c.deps.VolumesInUse != nil {
		desired.Status.VolumesInUse = volumes // the list the read above was chosen for
	}
	current := old
	if statusChanged(old.Status, desired.Status) || now.Sub(c.lastReport) >= c.opts.ReportFrequency {
		if current, err = patchStatus(ctx, c.deps.Heartbeat, old, desired); err != nil {
			return err
		}
		c.lastReport = now
		klog.V(4).InfoS("Posted node status", "node", c.opts.NodeName)
	}
	before := old.Status.Conditions
	if c.announcePressure {
		before = withoutPressure(before)
		c.announcePressure = false
	}
	c.setNode(current)
	c.postedVolumes = current.Status.VolumesInUse
	if c.deps.VolumesReportedInUse != nil {
		c.deps.VolumesReportedInUse(current.Status.VolumesInUse)
	}
	c.recordTransitions(before, current.Status.Conditions)
	return nil
}

// setStatus fills in everything the node reports about itself.
func (c *Controller) setStatus(ctx context.Context, n *v1.Node, now time.Time) {
	c.setResources(n)
	c.setAddresses(n)
	n.Status.DaemonEndpoints.KubeletEndpoint.Port = c.opts.Port
	c.setNodeInfo(ctx, &n.Status.NodeInfo)
	c.setImages(ctx, n)
	if c.deps.VolumesInUse != nil {
		n.Status.VolumesInUse = c.deps.VolumesInUse()
	}
	if c.deps.RuntimeFeatures != nil {
		handlers, features := c.deps.RuntimeFeatures()
		n.Status.RuntimeHandlers = handlers
		if features != nil {
			n.Status.Features = features
		}
	}
	c.setConditions(n, now)
}

// setAddresses sets the node's addresses, unless the cloud controller manager owns them.
func (c *Controller) setAddresses(n *v1.Node) {
	if keep, addrs := c.cloudAddresses(n); keep {
		if addrs != nil {
			n.Status.Addresses = addrs
		}
		return
	}
	addrs, err := addresses(c.opts.NodeIPs, c.opts.Hostname, c.primaryIP)
	if err != nil {
		klog.ErrorS(err, "Unable to work out the node's addresses", "node", c.opts.NodeName)
		return
	}
	n.Status.Addresses = addrs
}

// setResources sets capacity and allocatable. If the root filesystem cannot be measured, the
// last ephemeral-storage capacity stands.
func (c *Controller) setResources(n *v1.Node) {
	rootFs, err := c.deps.Paths.FilesystemCapacity(c.opts.RootDir)
	if err != nil {
		klog.V(2).InfoS("Unable to measure the root filesystem", "err", err)
		if q, ok := n.Status.Capacity[v1.ResourceEphemeralStorage]; ok {
			rootFs = q.Value()
		}
	}
	capacity := machine.Capacity(c.machine, c.opts.MaxPods, rootFs)
	reserved, err := machine.Reservation(capacity, c.opts.KubeReserved, c.opts.SystemReserved, c.opts.EvictionHard)
	if err != nil {
		reserved = c.reserved // cannot happen: New parsed the same values
	}
	n.Status.Capacity = capacity
	n.Status.Allocatable = machine.Allocatable(capacity, reserved)
	c.addDevices(n)
}

// addDevices reports the device plugin resources. Reservations do not apply to them.
func (c *Controller) addDevices(n *v1.Node) {
	if c.deps.Devices == nil {
		return
	}
	capacity, allocatable := c.deps.Devices()
	for name, q := range capacity {
		n.Status.Capacity[name] = q
		n.Status.Allocatable[name] = allocatable[name]
	}
}

func (c *Controller) setNodeInfo(ctx context.Context, info *v1.NodeSystemInfo) {
	m := c.machine
	info.MachineID, info.SystemUUID, info.BootID = m.MachineID, m.SystemUUID, m.BootID
	info.KernelVersion, info.OSImage = m.KernelVersion, m.OSImage
	info.OperatingSystem, info.Architecture = m.OperatingSystem, m.Architecture
	info.KubeletVersion, info.KubeProxyVersion = version.KubeletVersion, ""
	if c.deps.Runtime != nil {
		name, ver, err := c.deps.Runtime.Version(ctx)
		if err != nil {
			klog.V(2).InfoS("Unable to get the container runtime version", "err", err)
		} else {
			c.runtimeVersion = name + "://" + ver
		}
	}
	if c.runtimeVersion != "" {
		info.ContainerRuntimeVersion = c.runtimeVersion
	}
}

// setImages lists the node's images, largest first, capped as nodeStatusMaxImages says. On a
// runtime error the previous list stands.
func (c *Controller) setImages(ctx context.Context, n *v1.Node) {
	if c.deps.Images == nil {
		return
	}
	images, err := c.deps.Images.List(ctx)
	if err != nil {
		klog.V(2).InfoS("Unable to list images for the node status", "err", err)
		return
	}
	if max := int(c.opts.MaxImages); max >= 0 && len(images) > max {
		images = images[:max]
	}
	for i := range images {
		if len(images[i].Names) > maxNamesPerImage {
			images[i].Names = images[i].Names[:maxNamesPerImage]
		}
	}
	n.Status.Images = images
}

// statusChanged compares two statuses, ignoring condition heartbeat times.
func statusChanged(old, desired v1.NodeStatus) bool {
	a, b := old.DeepCopy(), desired.DeepCopy()
	for _, s := range []*v1.NodeStatus{a, b} {
		for i := range s.Conditions {
			s.Conditions[i].LastHeartbeatTime = metav1.Time{}
		}
	}
	return !apiequality.Semantic.DeepEqual(a, b)
}
