package plugins

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"syscall"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/nodelet/nodelet/internal/volumes"
)

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

// fakeTokens mints numbered tokens.
type fakeTokens struct {
	mu   sync.Mutex
	reqs []*authnv1.TokenRequest
	sa   []string
}

func (f *fakeTokens) CreateServiceAccountToken(_ context.Context, ns, sa string, req *authnv1.TokenRequest) (*authnv1.TokenRequest, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reqs = append(f.reqs, req)
	f.sa = append(f.sa, ns+"/"+sa)
	out := req.DeepCopy()
	out.Status.Token = fmt.Sprintf("token-%d", len(f.reqs))
	return out, nil
}

// A projected token is requested bound to the pod, kept across syncs until 80% of its
// lifetime, then renewed; tearing the volume down forgets it.
func TestProjectedServiceAccountToken(t *testing.T) {
	tokens := &fakeTokens{}
	e := newEnv(t, func(d *Deps, _ *volumes.Options) { d.Tokens = tokens })
	e.objs.AddConfigMap("default", "kube-root-ca.crt", map[string]string{"ca.crt": "CA"})
	projected := e.plugin(projectedPlugin).(*objectPlugin)
	now := time.Now()
	projected.tokens.Now = func() time.Time { return now }
	pod := mounting("sa", v1.Volume{Name: "api", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{
		Sources: []v1.VolumeProjection{
			{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "token", Audience: "vault", ExpirationSeconds: ptr.To[int64](600)}},
			{ConfigMap: &v1.ConfigMapProjection{LocalObjectReference: v1.LocalObjectReference{Name: "kube-root-ca.crt"},
				Items: []v1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
			{DownwardAPI: &v1.DownwardAPIProjection{Items: []v1.DownwardAPIVolumeFile{
				{Path: "namespace", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}}}},
		}}}})
	pod.Spec.ServiceAccountName = "builder"
	var dir string
	for range 2 {
		m, err := e.setUp(pod, "api")
		if err != nil {
			t.Fatal(err)
		}
		dir = m.Path
	}
	want := map[string]string{"token": "-rw-r--r-- token-1", "ca.crt": "-rw-r--r-- CA", "namespace": "-rw-r--r-- default"}
	if got := readVolume(t, dir); !reflect.DeepEqual(got, want) {
		t.Errorf("projected volume = %v, want %v", got, want)
	}
	if len(tokens.reqs) != 1 {
		t.Fatalf("%d token requests for two syncs, want 1 (cached)", len(tokens.reqs))
	}
	spec := tokens.reqs[0].Spec
	if tokens.sa[0] != "default/builder" || !reflect.DeepEqual(spec.Audiences, []string{"vault"}) ||
		*spec.ExpirationSeconds != 600 || spec.BoundObjectRef.Kind != "Pod" || spec.BoundObjectRef.UID != pod.UID {
		t.Errorf("token request for %s: %+v", tokens.sa[0], spec)
	}

	now = now.Add(481 * time.Second) // past 80% of the 600s lifetime
	if _, err := e.setUp(pod, "api"); err != nil {
		t.Fatal(err)
	}
	if got := readVolume(t, dir)["token"]; got != "-rw-r--r-- token-2" {
		t.Errorf("token after refresh = %q, want token-2", got)
	}
	if err := projected.TearDown(context.Background(), pod.UID, dir); err != nil {
		t.Fatal(err)
	}
	if projected.tokens.Len() != 0 || len(e.mounter.Snapshot()) != 0 {
		t.Errorf("after TearDown: tokens %v, mounts %v", projected.tokens.Len(), e.mounter.Snapshot())
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("volume directory left: %v", err)
	}
}
