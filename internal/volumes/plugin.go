package volumes

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Spec is one of a pod's volumes as the plugins see it.
type Spec struct {
	// Volume is the pod's volume.
	Volume *v1.Volume
	// PV is the PersistentVolume bound to a persistentVolumeClaim volume's claim; nil for
	// every other volume.
	PV *v1.PersistentVolume
	// Claim is the persistentVolumeClaim volume's claim, as read at the pod's last sync.
	Claim *v1.PersistentVolumeClaim
	// ReadOnly is the claim reference's readOnly.
	ReadOnly bool
}

// Mount is where a volume that is set up is on the host.
type Mount struct {
	Path string
	// ReadOnly: containers only read it (nodelet writes its files, or the claim says so).
	ReadOnly bool
	// Block: Path is a block device (a PersistentVolume of volumeMode Block), handed to
	// containers through volumeDevices, never mounted.
	Block bool
	// SELinuxRelabel: the runtime should relabel it for the pod on an SELinux host, as
	// upstream asks for volumes it manages whose files can carry labels.
	SELinuxRelabel bool
	// InUse names the volume in the node's volumesInUse while it is set up (upstream's
	// unique volume name), for volumes the attach/detach controller attaches; empty for
	// the others.
	InUse v1.UniqueVolumeName
}

// Plugin sets up and tears down one type of volume.
type Plugin interface {
	// Name is the plugin's directory under a pod's volumes directory, as upstream names it
	// (kubernetes.io~empty-dir): a restart finds the volumes it set up there.
	Name() string
	// CanSetUp reports whether the plugin handles spec.
	CanSetUp(spec *Spec) bool
	// SetUp makes the volume ready for pod's containers, in or from dir
	// (pods/<uid>/volumes/<Name>/<volume>). It is called again for a volume already set up
	// (after a restart, and on every pod sync for a Refresher's) and then changes only what
	// changed: no remount, no rewrite of the same files.
	SetUp(ctx context.Context, pod *v1.Pod, spec *Spec, dir string) (Mount, error)
	// TearDown undoes SetUp knowing only the pod's UID and dir: the pod may be long gone.
	TearDown(ctx context.Context, uid types.UID, dir string) error
}

// Expander is a Plugin whose volumes grow while mounted: once a claim's PersistentVolume is
// larger than the claim's status says, the reconciler asks it to grow what is on the node
// (NodeExpandVolume) and then records the new size in the claim's status.
type Expander interface {
	ExpandMounted(ctx context.Context, spec *Spec, dir string) error
}

// Refresher is a Plugin whose volumes carry API objects or pod fields into running
// containers: they are set up again on every sync of their pod (upstream's RequiresRemount).
type Refresher interface {
	RefreshOnSync() bool
}

func refreshes(p Plugin) bool {
	r, ok := p.(Refresher)
	return ok && r.RefreshOnSync()
}
