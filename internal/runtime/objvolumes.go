package runtime

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
)

// Volume plugin directory names under <podDir>/volumes, as kubelet names them.
const (
	configMapPlugin   = "kubernetes.io~configmap"
	secretPlugin      = "kubernetes.io~secret"
	downwardAPIPlugin = "kubernetes.io~downward-api"
	projectedPlugin   = "kubernetes.io~projected"

	defaultVolumeFileMode = 0o644
)

// objectVolumePlugin names the plugin directory of a volume nodelet writes files into, or ""
// for other volume types.
func objectVolumePlugin(vol *v1.Volume) string {
	switch {
	case vol.ConfigMap != nil:
		return configMapPlugin
	case vol.Secret != nil:
		return secretPlugin
	case vol.DownwardAPI != nil:
		return downwardAPIPlugin
	case vol.Projected != nil:
		return projectedPlugin
	}
	return ""
}

func (m *manager) volumeDir(pod *v1.Pod, plugin, name string) string {
	return filepath.Join(m.podDir(string(pod.UID)), "volumes", plugin, name)
}

// setUpVolumes prepares the pod's volumes before its containers start: memory-backed
// emptyDirs get their tmpfs, and configMap, secret, downwardAPI and projected volumes are
// (re)written, so every sync carries object updates into running containers.
func (m *manager) setUpVolumes(ctx context.Context, pod *v1.Pod) error {
	objects := newObjectCache(m.objects)
	gid := int64(-1)
	if sc := pod.Spec.SecurityContext; sc != nil && sc.FSGroup != nil {
		gid = *sc.FSGroup
	}
	for i := range pod.Spec.Volumes {
		vol := &pod.Spec.Volumes[i]
		if vol.EmptyDir != nil && vol.EmptyDir.Medium == v1.StorageMediumMemory {
			if err := m.setUpMemoryEmptyDir(pod, vol); err != nil {
				return fmt.Errorf("emptyDir %q: %w", vol.Name, err)
			}
			continue
		}
		plugin := objectVolumePlugin(vol)
		if plugin == "" {
			continue
		}
		token := func(proj *v1.ServiceAccountTokenProjection) (string, error) {
			return m.tokens.get(ctx, m.objects, pod, proj)
		}
		files, err := volumeFiles(ctx, objects, m.envContextFor(ctx, pod), token, vol)
		if err != nil {
			return fmt.Errorf("volume %q: %w", vol.Name, err)
		}
		dir := m.volumeDir(pod, plugin, vol.Name)
		if plugin == secretPlugin || plugin == projectedPlugin {
			// Keep secrets and tokens off disk, as kubelet does; a host that cannot mount
			// still gets the files.
			if err := m.ensureTmpfs(pod, vol.Name, dir, 0); err != nil {
				klog.ErrorS(err, "Writing volume to disk instead of tmpfs", "pod", klog.KObj(pod), "volume", vol.Name)
			}
		}
		changed, err := writeAtomic(dir, files, gid)
		if err != nil {
			return fmt.Errorf("volume %q: %w", vol.Name, err)
		}
		if changed {
			klog.V(3).InfoS("Wrote volume", "pod", klog.KObj(pod), "volume", vol.Name, "files", len(files))
		}
	}
	return nil
}

// envContextFor is the downward API context of a pod's volumes.
func (m *manager) envContextFor(ctx context.Context, pod *v1.Pod) envContext {
	return envContext{ctx: ctx, pod: pod, nodeName: m.nodeName, hostIP: m.nodeIP, capacity: m.nodeCapacity()}
}

// volumeFiles computes the files of a configMap, secret, downwardAPI or projected volume;
// token supplies projected service account tokens.
func volumeFiles(ctx context.Context, oc *objectCache, ec envContext, token func(*v1.ServiceAccountTokenProjection) (string, error), vol *v1.Volume) (map[string]volumeFile, error) {
	files := map[string]volumeFile{}
	ns := ec.pod.Namespace
	switch {
	case vol.ConfigMap != nil:
		src := vol.ConfigMap
		return files, addConfigMap(ctx, oc, ns, src.Name, src.Items, src.Optional, fileMode(src.DefaultMode), files)
	case vol.Secret != nil:
		src := vol.Secret
		return files, addSecret(ctx, oc, ns, src.SecretName, src.Items, src.Optional, fileMode(src.DefaultMode), files)
	case vol.DownwardAPI != nil:
		return files, addDownwardAPI(ec, vol.DownwardAPI.Items, fileMode(vol.DownwardAPI.DefaultMode), files)
	case vol.Projected != nil:
		mode := fileMode(vol.Projected.DefaultMode)
		for _, s := range vol.Projected.Sources {
			var err error
			switch {
			case s.ConfigMap != nil:
				err = addConfigMap(ctx, oc, ns, s.ConfigMap.Name, s.ConfigMap.Items, s.ConfigMap.Optional, mode, files)
			case s.Secret != nil:
				err = addSecret(ctx, oc, ns, s.Secret.Name, s.Secret.Items, s.Secret.Optional, mode, files)
			case s.DownwardAPI != nil:
				err = addDownwardAPI(ec, s.DownwardAPI.Items, mode, files)
			case s.ServiceAccountToken != nil:
				var tok string
				if tok, err = token(s.ServiceAccountToken); err == nil {
					files[s.ServiceAccountToken.Path] = volumeFile{data: []byte(tok), mode: mode}
				}
			case s.ClusterTrustBundle != nil:
				err = fmt.Errorf("projected clusterTrustBundle sources are not supported by nodelet")
			}
			if err != nil {
				return nil, err
			}
		}
		return files, nil
	}
	return nil, fmt.Errorf("not a configMap, secret, downwardAPI or projected volume")
}

func fileMode(m *int32) os.FileMode {
	if m == nil {
		return defaultVolumeFileMode
	}
	return os.FileMode(*m) & os.ModePerm
}

func addConfigMap(ctx context.Context, oc *objectCache, ns, name string, items []v1.KeyToPath, optional *bool, mode os.FileMode, files map[string]volumeFile) error {
	cm, err := oc.configMap(ctx, ns, name, isTrue(optional))
	if err != nil || cm == nil {
		return err
	}
	return addKeys(configMapData(cm), items, isTrue(optional), "configMap "+name, mode, files)
}

func addSecret(ctx context.Context, oc *objectCache, ns, name string, items []v1.KeyToPath, optional *bool, mode os.FileMode, files map[string]volumeFile) error {
	s, err := oc.secret(ctx, ns, name, isTrue(optional))
	if err != nil || s == nil {
		return err
	}
	return addKeys(s.Data, items, isTrue(optional), "secret "+name, mode, files)
}

// addKeys adds every key, or only items (key → path, with an own mode) when given.
func addKeys(data map[string][]byte, items []v1.KeyToPath, optional bool, what string, mode os.FileMode, files map[string]volumeFile) error {
	if len(items) == 0 {
		for k, v := range data {
			files[k] = volumeFile{data: v, mode: mode}
		}
		return nil
	}
	for _, it := range items {
		v, ok := data[it.Key]
		if !ok {
			if optional {
				continue
			}
			return fmt.Errorf("%s has no key %q", what, it.Key)
		}
		m := mode
		if it.Mode != nil {
			m = fileMode(it.Mode)
		}
		files[it.Path] = volumeFile{data: v, mode: m}
	}
	return nil
}

// addDownwardAPI adds pod fields and container resources, one file per item.
func addDownwardAPI(ec envContext, items []v1.DownwardAPIVolumeFile, mode os.FileMode, files map[string]volumeFile) error {
	for _, it := range items {
		var value string
		var err error
		switch {
		case it.FieldRef != nil:
			value, err = ec.fieldValue(it.FieldRef.FieldPath)
		case it.ResourceFieldRef != nil:
			c := findContainer(ec.pod, it.ResourceFieldRef.ContainerName)
			if c == nil {
				err = fmt.Errorf("resourceFieldRef: container %q not found", it.ResourceFieldRef.ContainerName)
			} else {
				value, err = ec.resourceValue(it.ResourceFieldRef, c)
			}
		default:
			err = fmt.Errorf("downwardAPI item %q has neither fieldRef nor resourceFieldRef", it.Path)
		}
		if err != nil {
			return err
		}
		m := mode
		if it.Mode != nil {
			m = fileMode(it.Mode)
		}
		files[it.Path] = volumeFile{data: []byte(value), mode: m}
	}
	return nil
}
