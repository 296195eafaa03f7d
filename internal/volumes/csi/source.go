package csi

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/nodelet/nodelet/internal/lib/atomicfile"
	"github.com/nodelet/nodelet/internal/volumes"
)

// source is a CSI volume as the node service sees it, from a PersistentVolume or an inline
// ephemeral volume.
type source struct {
	driver, handle string
	// specName names the volume in vol_data.json: the PV's name, or the pod's volume.
	specName     string
	readOnly     bool
	fsType       string
	mountOptions []string
	attributes   map[string]string
	// publishSecret and stageSecret hold the credentials the driver asks for, if any.
	publishSecret, stageSecret *v1.SecretReference
	accessModes                []v1.PersistentVolumeAccessMode
	ephemeral                  bool
	// block: the PV's volumeMode is Block; the driver publishes a device, not a filesystem.
	block bool
}

func sourceOf(pod *v1.Pod, s *volumes.Spec) source {
	if s.PV != nil {
		c := s.PV.Spec.CSI
		return source{
			driver: c.Driver, handle: c.VolumeHandle, specName: s.PV.Name,
			readOnly: c.ReadOnly || s.ReadOnly, fsType: c.FSType, mountOptions: s.PV.Spec.MountOptions,
			attributes: c.VolumeAttributes, publishSecret: c.NodePublishSecretRef, stageSecret: c.NodeStageSecretRef,
			accessModes: s.PV.Spec.AccessModes,
			block:       s.PV.Spec.VolumeMode != nil && *s.PV.Spec.VolumeMode == v1.PersistentVolumeBlock,
		}
	}
	c := s.Volume.CSI
	src := source{
		driver: c.Driver, handle: ephemeralHandle(pod.UID, s.Volume.Name), specName: s.Volume.Name,
		readOnly: ptr.Deref(c.ReadOnly, false), fsType: ptr.Deref(c.FSType, ""), attributes: c.VolumeAttributes,
		ephemeral: true,
	}
	if c.NodePublishSecretRef != nil {
		src.publishSecret = &v1.SecretReference{Namespace: pod.Namespace, Name: c.NodePublishSecretRef.Name}
	}
	return src
}

// ephemeralHandle names an inline volume to its driver: unique per pod and volume, as
// upstream makes it.
func ephemeralHandle(uid types.UID, volume string) string {
	return fmt.Sprintf("csi-%x", sha256.Sum256([]byte(string(uid)+volume)))
}

// inUseName is the volume's name in the node's volumesInUse, as upstream's CSI plugin names
// it; inline volumes are never attached, so they have none.
func (s source) inUseName() v1.UniqueVolumeName {
	if s.ephemeral {
		return ""
	}
	return v1.UniqueVolumeName("kubernetes.io/csi/" + s.driver + "^" + s.handle)
}

// attachmentName is the VolumeAttachment the attach/detach controller makes for a volume on
// this node, named as upstream names it.
func attachmentName(handle, driver, nodeName string) string {
	return fmt.Sprintf("csi-%x", sha256.Sum256([]byte(handle+driver+nodeName)))
}

// capability is the volume capability the node calls carry: a filesystem mount with the
// PV's fsType and mount options, and the access mode its access modes map to. mountGroup,
// when set, is the pod's fsGroup delegated to a driver with VOLUME_MOUNT_GROUP.
func (s source) capability(mountGroup string) *csipb.VolumeCapability {
	mode := csipb.VolumeCapability_AccessMode_SINGLE_NODE_WRITER
	switch {
	case slices.Contains(s.accessModes, v1.ReadWriteMany):
		mode = csipb.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER
	case slices.Contains(s.accessModes, v1.ReadOnlyMany) && !slices.Contains(s.accessModes, v1.ReadWriteOnce):
		mode = csipb.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY
	}
	c := &csipb.VolumeCapability{
		AccessType: &csipb.VolumeCapability_Mount{Mount: &csipb.VolumeCapability_MountVolume{
			FsType: s.fsType, MountFlags: s.mountOptions, VolumeMountGroup: mountGroup,
		}},
		AccessMode: &csipb.VolumeCapability_AccessMode{Mode: mode},
	}
	if s.block {
		c.AccessType = &csipb.VolumeCapability_Block{Block: &csipb.VolumeCapability_BlockVolume{}}
	}
	return c
}

// targetIn is where the driver publishes the volume in its directory: a mount point, or for
// a block volume the device file.
func targetIn(dir string, block bool) string {
	if block {
		return filepath.Join(dir, "dev")
	}
	return filepath.Join(dir, "mount")
}

// appliesFSGroup reports whether the pod's fsGroup is applied to the volume under the
// driver's fsGroupPolicy (upstream's default when the CSIDriver does not say, or is missing,
// is ReadWriteOnceWithFSType).
func (s source) appliesFSGroup(drv *storagev1.CSIDriver) bool {
	policy := storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy
	if drv != nil && drv.Spec.FSGroupPolicy != nil {
		policy = *drv.Spec.FSGroupPolicy
	}
	switch policy {
	case storagev1.FileFSGroupPolicy:
		return true
	case storagev1.NoneFSGroupPolicy:
		return false
	}
	if s.fsType == "" || s.block {
		return false
	}
	if s.ephemeral {
		return true
	}
	for _, m := range s.accessModes {
		if m != v1.ReadWriteOnce && m != v1.ReadWriteOncePod {
			return false
		}
	}
	return len(s.accessModes) > 0
}

// volData is what vol_data.json keeps next to a published volume (and a staged one), with
// upstream's keys: enough to unpublish and unstage it once the pod is gone, even after a
// restart.
type volData struct {
	SpecVolID           string `json:"specVolID"`
	VolumeHandle        string `json:"volumeHandle"`
	DriverName          string `json:"driverName"`
	NodeName            string `json:"nodeName"`
	AttachmentID        string `json:"attachmentID,omitempty"`
	VolumeLifecycleMode string `json:"volumeLifecycleMode"`
	// VolumeMode is nodelet's own: "Block" when the volume was published as a device.
	VolumeMode string `json:"volumeMode,omitempty"`
}

const volDataFile = "vol_data.json"

func writeVolData(dir string, d volData) error {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return err
	}
	b, err := json.Marshal(d)
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(filepath.Join(dir, volDataFile), b, 0o640)
}

// readVolData reads dir's vol_data.json; os.ErrNotExist when there is none.
func readVolData(dir string) (volData, error) {
	var d volData
	b, err := os.ReadFile(filepath.Join(dir, volDataFile))
	if err != nil {
		return d, err
	}
	if err := json.Unmarshal(b, &d); err != nil {
		return d, fmt.Errorf("%s: %w", filepath.Join(dir, volDataFile), err)
	}
	if d.DriverName == "" || d.VolumeHandle == "" {
		return d, errors.New(filepath.Join(dir, volDataFile) + ": no driver name or volume handle")
	}
	return d, nil
}

func lifecycleMode(ephemeral bool) string {
	if ephemeral {
		return string(storagev1.VolumeLifecycleEphemeral)
	}
	return string(storagev1.VolumeLifecyclePersistent)
}
