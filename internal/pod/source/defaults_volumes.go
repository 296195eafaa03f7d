package source

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
)

// Defaults of the volume sources that setVolumeDefaults does not need for running the pod,
// but which the API server fills in and upstream's static pod UID therefore hashes.
const defaultTokenExpirationSeconds = int64(3600)

// setPluginVolumeDefaults fills the API defaults of the network and cloud volume sources,
// projected sources and ephemeral claim templates.
func setPluginVolumeDefaults(vs *v1.VolumeSource) {
	if s := vs.ISCSI; s != nil && s.ISCSIInterface == "" {
		s.ISCSIInterface = "default"
	}
	if s := vs.RBD; s != nil {
		s.RBDPool = orDefault(s.RBDPool, "rbd")
		s.RadosUser = orDefault(s.RadosUser, "admin")
		s.Keyring = orDefault(s.Keyring, "/etc/ceph/keyring")
	}
	if s := vs.AzureDisk; s != nil {
		if s.CachingMode == nil {
			s.CachingMode = ptr.To(v1.AzureDataDiskCachingReadWrite)
		}
		if s.FSType == nil {
			s.FSType = ptr.To("ext4")
		}
		if s.ReadOnly == nil {
			s.ReadOnly = ptr.To(false)
		}
		if s.Kind == nil {
			s.Kind = ptr.To(v1.AzureSharedBlobDisk)
		}
	}
	if s := vs.ScaleIO; s != nil {
		s.StorageMode = orDefault(s.StorageMode, "ThinProvisioned")
		s.FSType = orDefault(s.FSType, "xfs")
	}
	if p := vs.Projected; p != nil {
		for i := range p.Sources {
			setProjectionDefaults(&p.Sources[i])
		}
	}
	if e := vs.Ephemeral; e != nil && e.VolumeClaimTemplate != nil {
		spec := &e.VolumeClaimTemplate.Spec
		if spec.VolumeMode == nil {
			spec.VolumeMode = ptr.To(v1.PersistentVolumeFilesystem)
		}
		roundUp(spec.Resources.Limits)
		roundUp(spec.Resources.Requests)
	}
}

func setProjectionDefaults(src *v1.VolumeProjection) {
	if t := src.ServiceAccountToken; t != nil && t.ExpirationSeconds == nil {
		t.ExpirationSeconds = ptr.To(defaultTokenExpirationSeconds)
	}
	if d := src.DownwardAPI; d != nil {
		for i := range d.Items {
			if ref := d.Items[i].FieldRef; ref != nil && ref.APIVersion == "" {
				ref.APIVersion = "v1"
			}
		}
	}
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// roundUpResources rounds every amount of the spec up to a thousandth, as the API server's
// defaulting does (a request of 0.0001 CPU becomes 1m); the stored spelling goes with it.
func roundUpResources(pod *v1.Pod) {
	spec := &pod.Spec
	for _, list := range [][]v1.Container{spec.InitContainers, spec.Containers} {
		for i := range list {
			roundUp(list[i].Resources.Limits)
			roundUp(list[i].Resources.Requests)
		}
	}
	for i := range spec.EphemeralContainers {
		r := &spec.EphemeralContainers[i].Resources
		roundUp(r.Limits)
		roundUp(r.Requests)
	}
	roundUp(spec.Overhead)
	if spec.Resources != nil {
		roundUp(spec.Resources.Limits)
		roundUp(spec.Resources.Requests)
	}
}

func roundUp(list v1.ResourceList) {
	for name, q := range list {
		q.RoundUp(resource.Milli)
		list[name] = q
	}
}
