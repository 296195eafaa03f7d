package runtime

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func int32Ptr(v int32) *int32 { return &v }

// volumeEnv is a test env whose manager reads objects from the returned fake.
func volumeEnv(t *testing.T) (*testEnv, *fakeObjects) {
	objs := &fakeObjects{}
	e := newTestEnv(t, func(o *Options) { o.Objects = objs })
	return e, objs
}

// readVolume returns the volume's files as seen through its top-level names, with modes.
func readVolume(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
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
			return walkResolved(t, dir, rel, out)
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

func walkResolved(t *testing.T, dir, rel string, out map[string]string) error {
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

func mountAt(t *testing.T, e *testEnv, ctrName, path string) (hostPath string, readOnly bool) {
	t.Helper()
	for _, m := range e.running(ctrName).Config.Mounts {
		if m.ContainerPath == path {
			return m.HostPath, m.Readonly
		}
	}
	t.Fatalf("no mount at %s", path)
	return "", false
}

func TestConfigMapAndSecretVolumes(t *testing.T) {
	e, objs := volumeEnv(t)
	objs.addConfigMap("default", "cfg", map[string]string{"a": "1", "b": "2"})
	objs.addSecret("default", "creds", map[string]string{"user": "admin", "pass": "pw"})
	c := ctr("app", "sleep", "3600")
	c.VolumeMounts = []v1.VolumeMount{{Name: "all", MountPath: "/all"}, {Name: "items", MountPath: "/items"}, {Name: "sec", MountPath: "/sec"}}
	pod := newPod("vols", c)
	pod.Spec.Volumes = []v1.Volume{
		{Name: "all", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{
			LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}}}},
		{Name: "items", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{
			LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}, DefaultMode: int32Ptr(0o400),
			Items: []v1.KeyToPath{{Key: "a", Path: "nested/x"}, {Key: "b", Path: "y", Mode: int32Ptr(0o600)}}}}},
		{Name: "sec", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "creds"}}},
	}
	if res := e.sync(pod); res.Err != nil {
		t.Fatal(res.Err)
	}
	allDir, ro := mountAt(t, e, "app", "/all")
	if !ro || allDir != filepath.Join(e.rootDir, "pods", "uid-vols", "volumes", configMapPlugin, "all") {
		t.Errorf("mount /all = %s readOnly=%v", allDir, ro)
	}
	if got, want := readVolume(t, allDir), map[string]string{"a": "-rw-r--r-- 1", "b": "-rw-r--r-- 2"}; !reflect.DeepEqual(got, want) {
		t.Errorf("configMap volume = %v, want %v", got, want)
	}
	itemsDir, _ := mountAt(t, e, "app", "/items")
	if got, want := readVolume(t, itemsDir), map[string]string{"nested/x": "-r-------- 1", "y": "-rw------- 2"}; !reflect.DeepEqual(got, want) {
		t.Errorf("configMap items volume = %v, want %v", got, want)
	}
	secDir, ro := mountAt(t, e, "app", "/sec")
	if !ro || !strings.Contains(secDir, secretPlugin) {
		t.Errorf("mount /sec = %s readOnly=%v", secDir, ro)
	}
	if got, want := readVolume(t, secDir), map[string]string{"user": "-rw-r--r-- admin", "pass": "-rw-r--r-- pw"}; !reflect.DeepEqual(got, want) {
		t.Errorf("secret volume = %v, want %v", got, want)
	}
	mounted := e.mgr.mounter.(*fakeMounter).mounted
	if _, ok := mounted[secDir]; !ok || len(mounted) != 1 {
		t.Errorf("tmpfs mounts %v, want only the secret volume %s", mounted, secDir)
	}
}

func TestConfigMapVolumeUpdatesOnResync(t *testing.T) {
	e, objs := volumeEnv(t)
	objs.addConfigMap("default", "cfg", map[string]string{"a": "1", "gone": "x"})
	c := ctr("app", "sleep", "3600")
	c.VolumeMounts = []v1.VolumeMount{{Name: "cfg", MountPath: "/cfg"}}
	pod := newPod("upd", c)
	pod.Spec.Volumes = []v1.Volume{{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{
		LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}}}}}
	if res := e.sync(pod); res.Err != nil {
		t.Fatal(res.Err)
	}
	dir, _ := mountAt(t, e, "app", "/cfg")
	firstTarget, _ := os.Readlink(filepath.Join(dir, dataLink))
	id := e.running("app").ID

	if res := e.sync(pod); res.Err != nil { // unchanged: nothing rewritten
		t.Fatal(res.Err)
	}
	if target, _ := os.Readlink(filepath.Join(dir, dataLink)); target != firstTarget {
		t.Errorf("unchanged configMap rewritten: %s -> %s", firstTarget, target)
	}

	objs.addConfigMap("default", "cfg", map[string]string{"a": "2", "new": "n"})
	if res := e.sync(pod); res.Err != nil {
		t.Fatal(res.Err)
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
	if e.running("app").ID != id {
		t.Error("container restarted on a configMap update")
	}
}

func TestVolumeObjectsMissing(t *testing.T) {
	e, _ := volumeEnv(t)
	c := ctr("app", "sleep", "3600")
	c.VolumeMounts = []v1.VolumeMount{{Name: "opt", MountPath: "/opt"}}
	pod := newPod("missing", c)
	pod.Spec.Volumes = []v1.Volume{{Name: "opt", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{
		SecretName: "nope", Optional: boolPtr(true)}}}}
	if res := e.sync(pod); res.Err != nil {
		t.Fatalf("optional missing secret: %v", res.Err)
	}
	dir, _ := mountAt(t, e, "app", "/opt")
	if got := readVolume(t, dir); len(got) != 0 {
		t.Errorf("optional missing secret volume = %v, want empty", got)
	}

	req := newPod("required", c)
	req.Spec.Volumes = []v1.Volume{{Name: "opt", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{
		LocalObjectReference: v1.LocalObjectReference{Name: "nope"}}}}}
	e.events()
	res := e.sync(req)
	if res.Err == nil || len(e.containersNamed("app")) != 1 {
		t.Fatalf("required missing configMap: err %v, %d app containers", res.Err, len(e.containersNamed("app")))
	}
	if !hasEvent(e.events(), "Warning FailedMount") {
		t.Error("no FailedMount event")
	}
}

func TestStandaloneConfigMapVolumeFails(t *testing.T) {
	e := newTestEnv(t)
	c := ctr("app", "sleep", "3600")
	c.VolumeMounts = []v1.VolumeMount{{Name: "cfg", MountPath: "/cfg"}}
	pod := newPod("standalone", c)
	pod.Spec.Volumes = []v1.Volume{{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{
		LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}, Optional: boolPtr(true)}}}}
	res := e.sync(pod)
	if res.Err == nil || !strings.Contains(res.Err.Error(), "configMap default/cfg: no API server (standalone)") {
		t.Errorf("err = %v", res.Err)
	}
}

func downwardItems() []v1.DownwardAPIVolumeFile {
	return []v1.DownwardAPIVolumeFile{
		{Path: "name", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}},
		{Path: "ns", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.namespace"}},
		{Path: "uid", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.uid"}},
		{Path: "labels", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.labels"}, Mode: int32Ptr(0o400)},
		{Path: "annotations", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.annotations"}},
		{Path: "cpu_limit", ResourceFieldRef: &v1.ResourceFieldSelector{ContainerName: "app", Resource: "limits.cpu", Divisor: resource.MustParse("1m")}},
		{Path: "mem_request", ResourceFieldRef: &v1.ResourceFieldSelector{ContainerName: "app", Resource: "requests.memory", Divisor: resource.MustParse("1Mi")}},
		{Path: "mem_limit", ResourceFieldRef: &v1.ResourceFieldSelector{ContainerName: "app", Resource: "limits.memory"}},
	}
}

func TestDownwardAPIVolume(t *testing.T) {
	e, _ := volumeEnv(t)
	e.mgr.capacityOnce.Do(func() {})
	e.mgr.capacity = nodeCapacity{milliCPU: 2000, memoryBytes: 1 << 30}
	c := ctr("app", "sleep", "3600")
	c.Resources.Limits = v1.ResourceList{v1.ResourceCPU: resource.MustParse("250m")}
	c.Resources.Requests = v1.ResourceList{v1.ResourceMemory: resource.MustParse("32Mi")}
	c.VolumeMounts = []v1.VolumeMount{{Name: "info", MountPath: "/info"}}
	pod := newPod("dapi", c)
	pod.Labels["tier"] = "web"
	pod.Spec.Volumes = []v1.Volume{{Name: "info", VolumeSource: v1.VolumeSource{DownwardAPI: &v1.DownwardAPIVolumeSource{Items: downwardItems()}}}}
	if res := e.sync(pod); res.Err != nil {
		t.Fatal(res.Err)
	}
	dir, ro := mountAt(t, e, "app", "/info")
	if !ro || !strings.Contains(dir, downwardAPIPlugin) {
		t.Errorf("mount /info = %s readOnly=%v", dir, ro)
	}
	want := map[string]string{
		"name": "-rw-r--r-- dapi", "ns": "-rw-r--r-- default", "uid": "-rw-r--r-- uid-dapi",
		"labels": "-r-------- app=\"dapi\"\ntier=\"web\"", "annotations": "-rw-r--r-- note=\"x\"",
		"cpu_limit": "-rw-r--r-- 250", "mem_request": "-rw-r--r-- 32", "mem_limit": "-rw-r--r-- 1073741824",
	}
	if got := readVolume(t, dir); !reflect.DeepEqual(got, want) {
		t.Errorf("downwardAPI volume =\n%v\nwant\n%v", got, want)
	}
}

func TestProjectedVolumeCombinesSources(t *testing.T) {
	e, objs := volumeEnv(t)
	objs.addConfigMap("default", "cfg", map[string]string{"a": "1", "b": "2"})
	objs.addSecret("default", "creds", map[string]string{"user": "admin"})
	c := ctr("app", "sleep", "3600")
	c.VolumeMounts = []v1.VolumeMount{{Name: "all", MountPath: "/all"}}
	pod := newPod("proj", c)
	pod.Spec.Volumes = []v1.Volume{{Name: "all", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{
		DefaultMode: int32Ptr(0o440),
		Sources: []v1.VolumeProjection{
			{ConfigMap: &v1.ConfigMapProjection{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"},
				Items: []v1.KeyToPath{{Key: "a", Path: "cfg/a"}}}},
			{Secret: &v1.SecretProjection{LocalObjectReference: v1.LocalObjectReference{Name: "creds"}}},
			{Secret: &v1.SecretProjection{LocalObjectReference: v1.LocalObjectReference{Name: "absent"}, Optional: boolPtr(true)}},
			{DownwardAPI: &v1.DownwardAPIProjection{Items: []v1.DownwardAPIVolumeFile{
				{Path: "podname", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}, Mode: int32Ptr(0o644)}}}},
		},
	}}}}
	if res := e.sync(pod); res.Err != nil {
		t.Fatal(res.Err)
	}
	dir, ro := mountAt(t, e, "app", "/all")
	if !ro || !strings.Contains(dir, projectedPlugin) {
		t.Errorf("mount /all = %s readOnly=%v", dir, ro)
	}
	want := map[string]string{"cfg/a": "-r--r----- 1", "user": "-r--r----- admin", "podname": "-rw-r--r-- proj"}
	if got := readVolume(t, dir); !reflect.DeepEqual(got, want) {
		t.Errorf("projected volume = %v, want %v", got, want)
	}

	token := newPod("token", c)
	token.Spec.Volumes = []v1.Volume{{Name: "all", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{
		Sources: []v1.VolumeProjection{{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "token"}}}}}}}
	if res := e.sync(token); res.Err == nil || !strings.Contains(res.Err.Error(), "serviceAccountToken") {
		t.Errorf("serviceAccountToken projection: err %v", res.Err)
	}
}

// fakeMounter records tmpfs mounts instead of mounting.
type fakeMounter struct{ mounted map[string]int64 }

func (f *fakeMounter) IsMountPoint(dir string) (bool, error) { _, ok := f.mounted[dir]; return ok, nil }
func (f *fakeMounter) MountTmpfs(dir string, size int64) error {
	f.mounted[dir] = size
	return nil
}

func TestMemoryEmptyDirGetsTmpfsOnce(t *testing.T) {
	e, _ := volumeEnv(t)
	mounter := e.mgr.mounter.(*fakeMounter)
	c := ctr("app", "sleep", "3600")
	c.VolumeMounts = []v1.VolumeMount{{Name: "mem", MountPath: "/mem"}, {Name: "disk", MountPath: "/disk"}}
	pod := newPod("tmpfs", c)
	limit := resource.MustParse("64Mi")
	pod.Spec.Volumes = []v1.Volume{
		{Name: "mem", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{Medium: v1.StorageMediumMemory, SizeLimit: &limit}}},
		{Name: "disk", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
	}
	for range 2 {
		if res := e.sync(pod); res.Err != nil {
			t.Fatal(res.Err)
		}
	}
	dir, _ := mountAt(t, e, "app", "/mem")
	if want := map[string]int64{dir: 64 << 20}; !reflect.DeepEqual(mounter.mounted, want) {
		t.Errorf("tmpfs mounts = %v, want %v", mounter.mounted, want)
	}
}

func TestMountPointsUnder(t *testing.T) {
	mountinfo := `22 1 8:1 / / rw,relatime - ext4 /dev/sda1 rw
80 22 0:50 / /var/lib/kubelet/pods/u1/volumes/kubernetes.io~empty-dir/mem rw - tmpfs tmpfs rw,size=65536k
81 22 0:51 / /var/lib/kubelet/pods/u1/volumes/kubernetes.io~empty-dir/with\040space rw - tmpfs tmpfs rw
82 80 0:52 / /var/lib/kubelet/pods/u1/volumes/kubernetes.io~empty-dir/mem/inner rw - tmpfs tmpfs rw
83 22 0:53 / /var/lib/kubelet/pods/u10/volumes/kubernetes.io~empty-dir/other rw - tmpfs tmpfs rw
`
	got, err := mountPointsUnder(strings.NewReader(mountinfo), "/var/lib/kubelet/pods/u1")
	if err != nil {
		t.Fatal(err)
	}
	base := "/var/lib/kubelet/pods/u1/volumes/kubernetes.io~empty-dir/"
	index := map[string]int{}
	for i, p := range got {
		index[p] = i
	}
	if len(got) != 3 || len(index) != 3 {
		t.Fatalf("mount points = %q, want mem, mem/inner and 'with space' under u1", got)
	}
	for _, p := range []string{base + "mem", base + "mem/inner", base + "with space"} {
		if _, ok := index[p]; !ok {
			t.Errorf("mount points %q lack %q", got, p)
		}
	}
	if index[base+"mem/inner"] > index[base+"mem"] {
		t.Errorf("mount points %q: a nested mount must come before its parent", got)
	}
}

func TestWriteAtomicFSGroup(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("chown needs root")
	}
	dir := t.TempDir()
	files := map[string]volumeFile{"k": {data: []byte("v"), mode: 0o400}}
	if _, err := writeAtomic(dir, files, 1234); err != nil {
		t.Fatal(err)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(filepath.Join(dir, "k"), &st); err != nil {
		t.Fatal(err)
	}
	if st.Gid != 1234 || os.FileMode(st.Mode).Perm() != 0o440 {
		t.Errorf("file gid %d mode %v, want 1234 and 0440", st.Gid, os.FileMode(st.Mode).Perm())
	}
	if changed, err := writeAtomic(dir, files, 1234); err != nil || changed {
		t.Errorf("second write: changed=%v err=%v, want no change", changed, err)
	}
}

// tokenObjects adds a TokenGetter to fakeObjects that mints numbered tokens.
type tokenObjects struct {
	fakeObjects
	mu   sync.Mutex
	reqs []*authnv1.TokenRequest
	sa   []string
}

func (f *tokenObjects) CreateServiceAccountToken(_ context.Context, ns, sa string, req *authnv1.TokenRequest) (*authnv1.TokenRequest, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reqs = append(f.reqs, req)
	f.sa = append(f.sa, ns+"/"+sa)
	out := req.DeepCopy()
	out.Status.Token = fmt.Sprintf("token-%d", len(f.reqs))
	return out, nil
}

func TestProjectedServiceAccountToken(t *testing.T) {
	objs := &tokenObjects{}
	objs.addConfigMap("default", "kube-root-ca.crt", map[string]string{"ca.crt": "CA"})
	e := newTestEnv(t, func(o *Options) { o.Objects = objs })
	now := time.Now()
	e.mgr.tokens.now = func() time.Time { return now }
	c := ctr("app", "sleep", "3600")
	c.VolumeMounts = []v1.VolumeMount{{Name: "api", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount"}}
	pod := newPod("sa", c)
	pod.Spec.ServiceAccountName = "builder"
	pod.Spec.Volumes = []v1.Volume{{Name: "api", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{
		Sources: []v1.VolumeProjection{
			{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "token", Audience: "vault", ExpirationSeconds: int64Ptr(600)}},
			{ConfigMap: &v1.ConfigMapProjection{LocalObjectReference: v1.LocalObjectReference{Name: "kube-root-ca.crt"},
				Items: []v1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
			{DownwardAPI: &v1.DownwardAPIProjection{Items: []v1.DownwardAPIVolumeFile{
				{Path: "namespace", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}}}},
		}}}}}
	for range 2 {
		if res := e.sync(pod); res.Err != nil {
			t.Fatal(res.Err)
		}
	}
	dir, _ := mountAt(t, e, "app", "/var/run/secrets/kubernetes.io/serviceaccount")
	want := map[string]string{"token": "-rw-r--r-- token-1", "ca.crt": "-rw-r--r-- CA", "namespace": "-rw-r--r-- default"}
	if got := readVolume(t, dir); !reflect.DeepEqual(got, want) {
		t.Errorf("projected volume = %v, want %v", got, want)
	}
	if len(objs.reqs) != 1 {
		t.Fatalf("%d token requests for two syncs, want 1 (cached)", len(objs.reqs))
	}
	spec := objs.reqs[0].Spec
	if objs.sa[0] != "default/builder" || !reflect.DeepEqual(spec.Audiences, []string{"vault"}) ||
		*spec.ExpirationSeconds != 600 || spec.BoundObjectRef.Kind != "Pod" || spec.BoundObjectRef.UID != pod.UID {
		t.Errorf("token request for %s: %+v", objs.sa[0], spec)
	}

	now = now.Add(481 * time.Second) // past 80% of the 600s lifetime
	if res := e.sync(pod); res.Err != nil {
		t.Fatal(res.Err)
	}
	if got := readVolume(t, dir)["token"]; got != "-rw-r--r-- token-2" {
		t.Errorf("token after refresh = %q, want token-2", got)
	}
}
