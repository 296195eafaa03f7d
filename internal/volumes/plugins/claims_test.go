package plugins

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/nodelet/nodelet/internal/volumes"
)

// fakeClaims holds PersistentVolumeClaims and PersistentVolumes.
type fakeClaims struct {
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

func claiming(claim string, readOnly bool) *v1.Pod {
	return mounting("p-"+claim, v1.Volume{Name: "data", VolumeSource: v1.VolumeSource{
		PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: claim, ReadOnly: readOnly}}})
}

// A bound claim mounts its hostPath or local volume (read-only when the claim reference says
// so); an unbound claim or a claim standalone fails the pod's volumes at once, a volume for
// other nodes fails its mount, with upstream's words.
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
	e := newEnv(t, func(_ *Deps, o *volumes.Options) {
		o.Claims = claims
		o.Node = func() *v1.Node {
			return &v1.Node{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"zone": "a"}}}
		}
	})
	mount := func(pod *v1.Pod) (string, bool, error) {
		if err := e.mount(pod); err != nil {
			return "", false, err
		}
		return e.vm.HostPath(pod, "data")
	}
	if path, ro, err := mount(claiming("host", false)); err != nil || ro || path != filepath.Join(dir, "host") {
		t.Errorf("hostPath claim: %q %v, %v", path, ro, err)
	}
	if path, ro, err := mount(claiming("local", true)); err != nil || !ro || path != filepath.Join(dir, "disk") {
		t.Errorf("read-only local claim: %q %v, %v", path, ro, err)
	}
	if _, _, err := mount(claiming("pending", false)); err == nil || !strings.Contains(err.Error(), "failed to process volumes=[data]: PVC default/pending has non-bound phase") {
		t.Errorf("pending claim: %v", err)
	}

	claims.volumes["pv-elsewhere"].Spec.NodeAffinity.Required.NodeSelectorTerms[0].MatchExpressions[0].Values = []string{"b"}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	go func() { _ = e.vm.WaitForAttachAndMount(ctx, claiming("elsewhere", false)) }()
	if ev := waitEvent(t, e); !strings.Contains(ev, `MountVolume.NodeAffinity check failed for volume "pv-elsewhere"`) {
		t.Errorf("volume for other nodes: %s", ev)
	}

	standalone := newEnv(t)
	if err := standalone.mount(claiming("host", false)); err == nil || !strings.Contains(err.Error(), "needs the API server") {
		t.Errorf("standalone: %v", err)
	}
}

// A generic ephemeral volume uses the claim the ephemeral volume controller made for it,
// <pod>-<volume>, and only when the pod owns it (upstream's check and words).
func TestGenericEphemeralVolumeUsesThePodsClaim(t *testing.T) {
	dir := t.TempDir()
	claims := &fakeClaims{claims: map[string]*v1.PersistentVolumeClaim{}, volumes: map[string]*v1.PersistentVolume{}}
	claims.bind("default", "scratch-data", v1.PersistentVolumeSource{HostPath: &v1.HostPathVolumeSource{Path: filepath.Join(dir, "eph")}}, false)
	claims.bind("default", "stranger-data", v1.PersistentVolumeSource{HostPath: &v1.HostPathVolumeSource{Path: filepath.Join(dir, "other")}}, false)
	e := newEnv(t, func(_ *Deps, o *volumes.Options) { o.Claims = claims })
	ephemeralPod := func(name string) *v1.Pod {
		return mounting(name, v1.Volume{Name: "data", VolumeSource: v1.VolumeSource{Ephemeral: &v1.EphemeralVolumeSource{
			VolumeClaimTemplate: &v1.PersistentVolumeClaimTemplate{},
		}}})
	}
	pod := ephemeralPod("scratch")
	claims.claims["default/scratch-data"].OwnerReferences = []metav1.OwnerReference{{
		APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID, Controller: ptr.To(true),
	}}
	if err := e.mount(pod); err != nil {
		t.Fatalf("ephemeral volume of its own claim: %v", err)
	}
	if path, ro, err := e.vm.HostPath(pod, "data"); err != nil || ro || path != filepath.Join(dir, "eph") {
		t.Errorf("ephemeral volume: %q %v, %v", path, ro, err)
	}
	err := e.mount(ephemeralPod("stranger"))
	if want := "PVC default/stranger-data was not created for pod default/stranger (pod is not owner)"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("claim the pod does not own: %v, want %q", err, want)
	}
}
