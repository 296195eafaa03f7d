package runtime

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// fakeClaims adds PersistentVolumeClaims and PersistentVolumes to fakeObjects.
type fakeClaims struct {
	fakeObjects
	claims  map[string]*v1.PersistentVolumeClaim
	volumes map[string]*v1.PersistentVolume
}

func (f *fakeClaims) GetPersistentVolumeClaim(_ context.Context, ns, name string) (*v1.PersistentVolumeClaim, error) {
	if c, ok := f.claims[ns+"/"+name]; ok {
		return c, nil
	}
	return nil, apierrors.NewNotFound(v1.Resource("persistentvolumeclaims"), name)
}

func (f *fakeClaims) GetPersistentVolume(_ context.Context, name string) (*v1.PersistentVolume, error) {
	if pv, ok := f.volumes[name]; ok {
		return pv, nil
	}
	return nil, apierrors.NewNotFound(v1.Resource("persistentvolumes"), name)
}

// bind makes a claim bound to a volume with source, optionally only for nodes labelled zone=a.
func (f *fakeClaims) bind(ns, claim string, source v1.PersistentVolumeSource, zoned bool) {
	pvc := &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: claim, Namespace: ns, UID: types.UID("uid-claim-" + claim)},
		Spec: v1.PersistentVolumeClaimSpec{VolumeName: "pv-" + claim}, Status: v1.PersistentVolumeClaimStatus{Phase: v1.ClaimBound}}
	pv := &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-" + claim},
		Spec: v1.PersistentVolumeSpec{PersistentVolumeSource: source, ClaimRef: &v1.ObjectReference{UID: pvc.UID}}}
	if zoned {
		pv.Spec.NodeAffinity = &v1.VolumeNodeAffinity{Required: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
			MatchExpressions: []v1.NodeSelectorRequirement{{Key: "zone", Operator: v1.NodeSelectorOpIn, Values: []string{"a"}}},
		}}}}
	}
	f.claims[ns+"/"+claim], f.volumes[pv.Name] = pvc, pv
}

// A bound claim mounts its hostPath or local volume; an unbound claim, a volume for other
// nodes or a claim standalone fail the container with upstream's words.
func TestPersistentVolumeClaims(t *testing.T) {
	dir := t.TempDir()
	claims := &fakeClaims{claims: map[string]*v1.PersistentVolumeClaim{}, volumes: map[string]*v1.PersistentVolume{}}
	claims.bind("default", "host", v1.PersistentVolumeSource{HostPath: &v1.HostPathVolumeSource{Path: filepath.Join(dir, "host")}}, false)
	if err := os.MkdirAll(filepath.Join(dir, "disk"), 0o755); err != nil {
		t.Fatal(err)
	}
	claims.bind("default", "local", v1.PersistentVolumeSource{Local: &v1.LocalVolumeSource{Path: filepath.Join(dir, "disk")}}, true)
	claims.bind("default", "elsewhere", v1.PersistentVolumeSource{Local: &v1.LocalVolumeSource{Path: filepath.Join(dir, "disk")}}, true)
	claims.claims["default/pending"] = &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "pending", Namespace: "default"},
		Status: v1.PersistentVolumeClaimStatus{Phase: v1.ClaimPending}}
	zone := "a"
	e := newTestEnv(t, func(o *Options) {
		o.Objects = claims
		o.Node = func() *v1.Node {
			return &v1.Node{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"zone": zone}}}
		}
	})
	mount := func(claim string) (string, error) {
		pod := newPod("p", ctr("app"))
		pod.Spec.Volumes = []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{
			PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}}
		path, _, err := e.mgr.volumeHostPath(context.Background(), pod, v1.VolumeMount{Name: "data", MountPath: "/data"})
		return path, err
	}
	if path, err := mount("host"); err != nil || path != filepath.Join(dir, "host") {
		t.Errorf("hostPath claim: %q, %v", path, err)
	}
	if path, err := mount("local"); err != nil || path != filepath.Join(dir, "disk") {
		t.Errorf("local claim: %q, %v", path, err)
	}
	if _, err := mount("pending"); err == nil || !strings.Contains(err.Error(), "has non-bound phase") {
		t.Errorf("pending claim: %v", err)
	}
	zone = "b"
	if _, err := mount("elsewhere"); err == nil || !strings.Contains(err.Error(), "NodeAffinity check failed") {
		t.Errorf("volume for other nodes: %v", err)
	}
	standalone := newTestEnv(t)
	pod := newPod("p", ctr("app"))
	pod.Spec.Volumes = []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{
		PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "host"}}}}
	if _, _, err := standalone.mgr.volumeHostPath(context.Background(), pod, v1.VolumeMount{Name: "data"}); err == nil || !strings.Contains(err.Error(), "needs the API server") {
		t.Errorf("standalone: %v", err)
	}
}
