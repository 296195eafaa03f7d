package plugins

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"k8s.io/utils/ptr"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/nodelet/nodelet/internal/volumes"
)

// readVolume returns the volume's files as seen through its top-level names, with modes.
func readVolume(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		rel, _ := filepath.Rel(dir, p)
		if err != nil {
			if os.IsNotExist(err) && strings.HasPrefix(rel, "..") {
				return nil // an old data directory, removed by a concurrent update
			}
			return err
		}
		if strings.HasPrefix(rel, "..") {
			if info.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if info.Mode()&os.ModeSymlink != 0 {
			target, err := os.Readlink(p)
			if err != nil || target != filepath.Join(dataLink, rel) {
				t.Errorf("%s links to %q, want %q", rel, target, filepath.Join(dataLink, rel))
			}
			return walkResolved(dir, rel, out)
		}
		if !info.IsDir() {
			t.Errorf("%s is a plain file, not a link through %s", rel, dataLink)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func walkResolved(dir, rel string, out map[string]string) error {
	return filepath.Walk(filepath.Join(dir, dataLink, rel), func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		sub, _ := filepath.Rel(filepath.Join(dir, dataLink), p)
		out[sub] = info.Mode().Perm().String() + " " + string(data)
		return nil
	})
}

func TestConfigMapAndSecretVolumes(t *testing.T) {
	e := newEnv(t)
	e.objs.AddConfigMap("default", "cfg", map[string]string{"a": "1", "b": "2"})
	e.objs.AddSecret("default", "creds", map[string]string{"user": "admin", "pass": "pw"})
	pod := mounting("vols",
		v1.Volume{Name: "all", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{
			LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}}}},
		v1.Volume{Name: "items", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{
			LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}, DefaultMode: ptr.To[int32](0o400),
			Items: []v1.KeyToPath{{Key: "a", Path: "nested/x"}, {Key: "b", Path: "y", Mode: ptr.To[int32](0o600)}}}}},
		v1.Volume{Name: "sec", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "creds"}}},
	)
	if err := e.mount(pod); err != nil {
		t.Fatal(err)
	}
	allDir, ro := e.hostPath(pod, "all")
	if !ro || allDir != filepath.Join(e.root, "pods", "uid-vols", "volumes", configMapPlugin, "all") {
		t.Errorf("volume all = %s readOnly=%v", allDir, ro)
	}
	if got, want := readVolume(t, allDir), map[string]string{"a": "-rw-r--r-- 1", "b": "-rw-r--r-- 2"}; !reflect.DeepEqual(got, want) {
		t.Errorf("configMap volume = %v, want %v", got, want)
	}
	itemsDir, _ := e.hostPath(pod, "items")
	if got, want := readVolume(t, itemsDir), map[string]string{"nested/x": "-r-------- 1", "y": "-rw------- 2"}; !reflect.DeepEqual(got, want) {
		t.Errorf("configMap items volume = %v, want %v", got, want)
	}
	secDir, ro := e.hostPath(pod, "sec")
	if !ro || !strings.Contains(secDir, secretPlugin) {
		t.Errorf("volume sec = %s readOnly=%v", secDir, ro)
	}
	if got, want := readVolume(t, secDir), map[string]string{"user": "-rw-r--r-- admin", "pass": "-rw-r--r-- pw"}; !reflect.DeepEqual(got, want) {
		t.Errorf("secret volume = %v, want %v", got, want)
	}
	mounted := e.mounter.Snapshot()
	if _, ok := mounted[secDir]; !ok || len(mounted) != 1 {
		t.Errorf("tmpfs mounts %v, want only the secret volume %s", mounted, secDir)
	}
}

// Setting a configMap volume up again rewrites nothing while the object is the same, and
// swaps in the new files at once when it changed.
func TestConfigMapVolumeUpdates(t *testing.T) {
	e := newEnv(t)
	e.objs.AddConfigMap("default", "cfg", map[string]string{"a": "1", "gone": "x"})
	pod := mounting("upd", v1.Volume{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{
		LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}}}})
	m, err := e.setUp(pod, "cfg")
	if err != nil {
		t.Fatal(err)
	}
	dir := m.Path
	firstTarget, _ := os.Readlink(filepath.Join(dir, dataLink))
	if _, err := e.setUp(pod, "cfg"); err != nil { // unchanged: nothing rewritten
		t.Fatal(err)
	}
	if target, _ := os.Readlink(filepath.Join(dir, dataLink)); target != firstTarget {
		t.Errorf("unchanged configMap rewritten: %s -> %s", firstTarget, target)
	}

	e.objs.AddConfigMap("default", "cfg", map[string]string{"a": "2", "new": "n"})
	if _, err := e.setUp(pod, "cfg"); err != nil {
		t.Fatal(err)
	}
	if got, want := readVolume(t, dir), map[string]string{"a": "-rw-r--r-- 2", "new": "-rw-r--r-- n"}; !reflect.DeepEqual(got, want) {
		t.Errorf("after update = %v, want %v", got, want)
	}
	if _, err := os.Lstat(filepath.Join(dir, "gone")); !os.IsNotExist(err) {
		t.Errorf("removed key still linked: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, firstTarget)); !os.IsNotExist(err) {
		t.Errorf("old data dir %s left behind: %v", firstTarget, err)
	}
}

// A later sync of a running pod carries the object's update into its volume.
func TestConfigMapVolumeUpdatesOnResync(t *testing.T) {
	e := newEnv(t)
	e.objs.AddConfigMap("default", "cfg", map[string]string{"a": "1"})
	pod := mounting("resync", v1.Volume{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{
		LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}}}})
	if err := e.mount(pod); err != nil {
		t.Fatal(err)
	}
	dir, _ := e.hostPath(pod, "cfg")
	e.objs.AddConfigMap("default", "cfg", map[string]string{"a": "2"})
	if err := e.mount(pod); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); readVolume(t, dir)["a"] != "-rw-r--r-- 2"; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("volume after the update and a sync: %v", readVolume(t, dir))
		}
	}
}

func TestVolumeObjectsMissing(t *testing.T) {
	e := newEnv(t)
	pod := mounting("missing", v1.Volume{Name: "opt", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{
		SecretName: "nope", Optional: ptr.To(true)}}})
	if err := e.mount(pod); err != nil {
		t.Fatalf("optional missing secret: %v", err)
	}
	dir, _ := e.hostPath(pod, "opt")
	if got := readVolume(t, dir); len(got) != 0 {
		t.Errorf("optional missing secret volume = %v, want empty", got)
	}

	req := mounting("required", v1.Volume{Name: "opt", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{
		LocalObjectReference: v1.LocalObjectReference{Name: "nope"}}}})
	go func() { _ = e.mount(req) }()
	want := `Warning FailedMount MountVolume.SetUp failed for volume "opt" : configmap "nope": configmaps "nope" not found`
	if ev := waitEvent(t, e); ev != want {
		t.Errorf("event %q, want %q", ev, want)
	}
	if _, _, err := e.vm.HostPath(req, "opt"); err == nil {
		t.Error("a volume that failed to set up is handed out")
	}
}

func TestStandaloneConfigMapVolumeFails(t *testing.T) {
	e := newEnv(t, func(d *Deps, _ *volumes.Options) { d.Objects = nil })
	pod := mounting("standalone", v1.Volume{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{
		LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}, Optional: ptr.To(true)}}})
	if _, err := e.setUp(pod, "cfg"); err == nil || !strings.Contains(err.Error(), "configMap default/cfg: no API server (standalone)") {
		t.Errorf("err = %v", err)
	}
}

func downwardItems() []v1.DownwardAPIVolumeFile {
	return []v1.DownwardAPIVolumeFile{
		{Path: "name", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}},
		{Path: "ns", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.namespace"}},
		{Path: "uid", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.uid"}},
		{Path: "labels", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.labels"}, Mode: ptr.To[int32](0o400)},
		{Path: "annotations", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.annotations"}},
		{Path: "cpu_limit", ResourceFieldRef: &v1.ResourceFieldSelector{ContainerName: "app", Resource: "limits.cpu", Divisor: resource.MustParse("1m")}},
		{Path: "mem_request", ResourceFieldRef: &v1.ResourceFieldSelector{ContainerName: "app", Resource: "requests.memory", Divisor: resource.MustParse("1Mi")}},
		{Path: "mem_limit", ResourceFieldRef: &v1.ResourceFieldSelector{ContainerName: "app", Resource: "limits.memory"}},
	}
}

func TestDownwardAPIVolume(t *testing.T) {
	e := newEnv(t)
	pod := mounting("dapi", v1.Volume{Name: "info", VolumeSource: v1.VolumeSource{DownwardAPI: &v1.DownwardAPIVolumeSource{Items: downwardItems()}}})
	c := &pod.Spec.Containers[0]
	c.Resources.Limits = v1.ResourceList{v1.ResourceCPU: resource.MustParse("250m")}
	c.Resources.Requests = v1.ResourceList{v1.ResourceMemory: resource.MustParse("32Mi")}
	pod.Labels["tier"] = "web"
	m, err := e.setUp(pod, "info")
	if err != nil {
		t.Fatal(err)
	}
	if !m.ReadOnly || !strings.Contains(m.Path, downwardAPIPlugin) {
		t.Errorf("volume info = %+v", m)
	}
	want := map[string]string{
		"name": "-rw-r--r-- dapi", "ns": "-rw-r--r-- default", "uid": "-rw-r--r-- uid-dapi",
		"labels": "-r-------- app=\"dapi\"\ntier=\"web\"", "annotations": "-rw-r--r-- note=\"x\"",
		"cpu_limit": "-rw-r--r-- 250", "mem_request": "-rw-r--r-- 32", "mem_limit": "-rw-r--r-- 1073741824",
	}
	if got := readVolume(t, m.Path); !reflect.DeepEqual(got, want) {
		t.Errorf("downwardAPI volume =\n%v\nwant\n%v", got, want)
	}
}

func TestProjectedVolumeCombinesSources(t *testing.T) {
	e := newEnv(t)
	e.objs.AddConfigMap("default", "cfg", map[string]string{"a": "1", "b": "2"})
	e.objs.AddSecret("default", "creds", map[string]string{"user": "admin"})
	pod := mounting("proj", v1.Volume{Name: "all", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{
		DefaultMode: ptr.To[int32](0o440),
		Sources: []v1.VolumeProjection{
			{ConfigMap: &v1.ConfigMapProjection{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"},
				Items: []v1.KeyToPath{{Key: "a", Path: "cfg/a"}}}},
			{Secret: &v1.SecretProjection{LocalObjectReference: v1.LocalObjectReference{Name: "creds"}}},
			{Secret: &v1.SecretProjection{LocalObjectReference: v1.LocalObjectReference{Name: "absent"}, Optional: ptr.To(true)}},
			{DownwardAPI: &v1.DownwardAPIProjection{Items: []v1.DownwardAPIVolumeFile{
				{Path: "podname", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}, Mode: ptr.To[int32](0o644)}}}},
		},
	}}})
	m, err := e.setUp(pod, "all")
	if err != nil {
		t.Fatal(err)
	}
	if !m.ReadOnly || !strings.Contains(m.Path, projectedPlugin) {
		t.Errorf("volume all = %+v", m)
	}
	want := map[string]string{"cfg/a": "-r--r----- 1", "user": "-r--r----- admin", "podname": "-rw-r--r-- proj"}
	if got := readVolume(t, m.Path); !reflect.DeepEqual(got, want) {
		t.Errorf("projected volume = %v, want %v", got, want)
	}

	token := mounting("token", v1.Volume{Name: "all", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{
		Sources: []v1.VolumeProjection{{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "token"}}}}}})
	if _, err := e.setUp(token, "all"); err == nil || !strings.Contains(err.Error(), "serviceAccountToken") {
		t.Errorf("serviceAccountToken projection: err %v", err)
	}
}
