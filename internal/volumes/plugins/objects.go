package plugins

import (
	"context"
	"fmt"
	"os"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/internal/podspec/downward"
	"github.com/nodelet/nodelet/internal/podspec/objects"
	"github.com/nodelet/nodelet/internal/podspec/podutil"
	"github.com/nodelet/nodelet/internal/volumes"
	"github.com/nodelet/nodelet/internal/volumes/mount"
	"github.com/nodelet/nodelet/internal/volumes/tokens"
)

// Volume plugin directory names under <podDir>/volumes, as upstream names them.
const (
	configMapPlugin   = "kubernetes.io~configmap"
	secretPlugin      = "kubernetes.io~secret"
	downwardAPIPlugin = "kubernetes.io~downward-api"
	projectedPlugin   = "kubernetes.io~projected"

	defaultVolumeFileMode = 0o644
)

// objectPlugin writes the files of configMap, secret, downwardAPI or projected volumes (one
// plugin each, by name). Containers only read them; every sync of the pod writes them again
// where they changed, carrying object updates into running containers.
type objectPlugin struct {
	name     string
	objects  objects.Getter
	tokens   *tokens.Cache
	mounter  mount.Mounter
	nodeName string
	nodeIP   string
	capacity downward.Capacity
}

func newObjectPlugin(name string, d Deps, tokens *tokens.Cache) *objectPlugin {
	return &objectPlugin{name: name, objects: d.Objects, tokens: tokens, mounter: d.Mounter,
		nodeName: d.NodeName, nodeIP: d.NodeIP, capacity: d.Capacity}
}

func (p *objectPlugin) Name() string { return p.name }

func (p *objectPlugin) CanSetUp(s *volumes.Spec) bool { return objectVolumePlugin(s.Volume) == p.name }

func (p *objectPlugin) RefreshOnSync() bool { return true }

// objectVolumePlugin names the plugin of a volume nodelet writes files into, or "".
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

func (p *objectPlugin) SetUp(ctx context.Context, pod *v1.Pod, s *volumes.Spec, dir string) (volumes.Mount, error) {
	token := func(proj *v1.ServiceAccountTokenProjection) (string, error) {
		return serviceAccountToken(ctx, p.tokens, pod, proj)
	}
	fields := downward.Fields{Pod: pod, NodeName: p.nodeName, HostIP: p.nodeIP, Capacity: p.capacity}
	files, err := volumeFiles(ctx, objects.NewLookups(p.objects), fields, token, s.Volume)
	if err != nil {
		return volumes.Mount{}, err
	}
	if p.name == secretPlugin || p.name == projectedPlugin {
		// Keep secrets and tokens off disk, as upstream does; a host that cannot mount
		// still gets the files.
		if err := ensureTmpfs(p.mounter, pod, dir, 0); err != nil {
			klog.ErrorS(err, "Writing volume to disk instead of tmpfs", "pod", klog.KObj(pod), "volume", s.Volume.Name)
		}
	}
	gid := int64(-1)
	if group := fsGroup(pod); group != nil {
		gid = *group
	}
	changed, err := writeAtomic(dir, files, gid)
	if err != nil {
		return volumes.Mount{}, err
	}
	if changed {
		klog.V(3).InfoS("Wrote volume", "pod", klog.KObj(pod), "volume", s.Volume.Name, "files", len(files))
	}
	return volumes.Mount{Path: dir, ReadOnly: true, SELinuxRelabel: true}, nil
}

func (p *objectPlugin) TearDown(_ context.Context, uid types.UID, dir string) error {
	if p.name == projectedPlugin {
		p.tokens.Forget(uid)
	}
	return removeVolumeDir(p.mounter, dir)
}

// volumeFiles computes the files of a configMap, secret, downwardAPI or projected volume;
// token supplies projected service account tokens.
func volumeFiles(ctx context.Context, lk *objects.Lookups, f downward.Fields, token func(*v1.ServiceAccountTokenProjection) (string, error), vol *v1.Volume) (map[string]volumeFile, error) {
	files := map[string]volumeFile{}
	ns := f.Pod.Namespace
	switch {
	case vol.ConfigMap != nil:
		src := vol.ConfigMap
		return files, addConfigMap(ctx, lk, ns, src.Name, src.Items, src.Optional, fileMode(src.DefaultMode), files)
	case vol.Secret != nil:
		src := vol.Secret
		return files, addSecret(ctx, lk, ns, src.SecretName, src.Items, src.Optional, fileMode(src.DefaultMode), files)
	case vol.DownwardAPI != nil:
		return files, addDownwardAPI(f, vol.DownwardAPI.Items, fileMode(vol.DownwardAPI.DefaultMode), files)
	case vol.Projected != nil:
		mode := fileMode(vol.Projected.DefaultMode)
		for _, s := range vol.Projected.Sources {
			if err := addProjection(ctx, lk, f, token, s, mode, files); err != nil {
				return nil, err
			}
		}
		return files, nil
	}
	return nil, fmt.Errorf("not a configMap, secret, downwardAPI or projected volume")
}

func addProjection(ctx context.Context, lk *objects.Lookups, f downward.Fields, token func(*v1.ServiceAccountTokenProjection) (string, error), s v1.VolumeProjection, mode os.FileMode, files map[string]volumeFile) error {
	ns := f.Pod.Namespace
	switch {
	case s.ConfigMap != nil:
		return addConfigMap(ctx, lk, ns, s.ConfigMap.Name, s.ConfigMap.Items, s.ConfigMap.Optional, mode, files)
	case s.Secret != nil:
		return addSecret(ctx, lk, ns, s.Secret.Name, s.Secret.Items, s.Secret.Optional, mode, files)
	case s.DownwardAPI != nil:
		return addDownwardAPI(f, s.DownwardAPI.Items, mode, files)
	case s.ServiceAccountToken != nil:
		tok, err := token(s.ServiceAccountToken)
		if err == nil {
			files[s.ServiceAccountToken.Path] = volumeFile{data: []byte(tok), mode: mode}
		}
		return err
	case s.ClusterTrustBundle != nil:
		return fmt.Errorf("projected clusterTrustBundle sources are not supported by nodelet")
	}
	return nil
}

func fileMode(m *int32) os.FileMode {
	if m == nil {
		return defaultVolumeFileMode
	}
	return os.FileMode(*m) & os.ModePerm
}

func isTrue(b *bool) bool { return b != nil && *b }

func addConfigMap(ctx context.Context, lk *objects.Lookups, ns, name string, items []v1.KeyToPath, optional *bool, mode os.FileMode, files map[string]volumeFile) error {
	cm, err := lk.ConfigMap(ctx, ns, name, isTrue(optional))
	if err != nil || cm == nil {
		return err
	}
	return addKeys(objects.ConfigMapData(cm), items, isTrue(optional), "configMap "+name, mode, files)
}

func addSecret(ctx context.Context, lk *objects.Lookups, ns, name string, items []v1.KeyToPath, optional *bool, mode os.FileMode, files map[string]volumeFile) error {
	s, err := lk.Secret(ctx, ns, name, isTrue(optional))
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
func addDownwardAPI(f downward.Fields, items []v1.DownwardAPIVolumeFile, mode os.FileMode, files map[string]volumeFile) error {
	for _, it := range items {
		var value string
		var err error
		switch {
		case it.FieldRef != nil:
			value, err = f.FieldValue(it.FieldRef.FieldPath)
		case it.ResourceFieldRef != nil:
			c := podutil.FindContainer(f.Pod, it.ResourceFieldRef.ContainerName)
			if c == nil {
				err = fmt.Errorf("resourceFieldRef: container %q not found", it.ResourceFieldRef.ContainerName)
			} else {
				value, err = f.ResourceValue(it.ResourceFieldRef, c)
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
