package volumes

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// claimStore is one bound claim and its volume; it records the resizes written back.
type claimStore struct {
	mu      sync.Mutex
	pvc     *v1.PersistentVolumeClaim
	pv      *v1.PersistentVolume
	resized []int64
}

func (c *claimStore) GetPersistentVolumeClaim(context.Context, string, string) (*v1.PersistentVolumeClaim, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pvc.DeepCopy(), nil
}

func (c *claimStore) GetPersistentVolume(context.Context, string) (*v1.PersistentVolume, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pv.DeepCopy(), nil
}

func (c *claimStore) MarkClaimResized(_ context.Context, _ *v1.PersistentVolumeClaim, capacity int64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.resized = append(c.resized, capacity)
	c.pvc.Status.Capacity[v1.ResourceStorage] = *resource.NewQuantity(capacity, resource.BinarySI)
	return nil
}

func (c *claimStore) grow(size string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pv.Spec.Capacity[v1.ResourceStorage] = resource.MustParse(size)
}

func (c *claimStore) resizes() []int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]int64(nil), c.resized...)
}

// expandingPlugin sets up claim volumes and counts the expansions asked of it.
type expandingPlugin struct {
	*fakePlugin
	mu         sync.Mutex
	expansions int
}

func (p *expandingPlugin) CanSetUp(s *Spec) bool { return s.PV != nil }

func (p *expandingPlugin) ExpandMounted(context.Context, *Spec, string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.expansions++
	return nil
}

func (p *expandingPlugin) count() int { p.mu.Lock(); defer p.mu.Unlock(); return p.expansions }

// A mounted claim volume whose PersistentVolume grew is grown on the node once, and the new
// size is written back to the claim with upstream's event.
func TestMountedClaimVolumeIsExpandedOnceItsVolumeGrew(t *testing.T) {
	size := resource.MustParse("1Gi")
	store := &claimStore{
		pvc: &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns", UID: "claim-uid"},
			Spec:   v1.PersistentVolumeClaimSpec{VolumeName: "pv-c"},
			Status: v1.PersistentVolumeClaimStatus{Phase: v1.ClaimBound, Capacity: v1.ResourceList{v1.ResourceStorage: size}}},
		pv: &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-c"}, Spec: v1.PersistentVolumeSpec{
			Capacity: v1.ResourceList{v1.ResourceStorage: size}, ClaimRef: &v1.ObjectReference{UID: "claim-uid"}}},
	}
	plugin := &expandingPlugin{fakePlugin: newFakePlugin()}
	e := newTestEnv(t, t.TempDir(), func(o *Options) {
		o.Plugins, o.Claims, o.Resizer = []Plugin{plugin}, store, store
	})
	e.run(t)
	pod := podWith("u1")
	pod.Spec.Volumes = []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "c"}}}}
	pod.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "data", MountPath: "/data"}}
	if err := e.m.WaitForAttachAndMount(t.Context(), pod); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	if plugin.count() != 0 {
		t.Fatalf("expanded %d times with nothing to grow", plugin.count())
	}

	store.grow("2Gi")
	if err := e.m.WaitForAttachAndMount(t.Context(), pod); err != nil { // the next sync reads the claim again
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(store.resizes()) == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got := store.resizes(); len(got) != 1 || got[0] != 2<<30 || plugin.count() != 1 {
		t.Fatalf("resizes %v, expansions %d; want one to 2Gi", got, plugin.count())
	}
	if evs := events(e.recorder); len(evs) != 1 || !strings.HasPrefix(evs[0], "Normal FileSystemResizeSuccessful MountVolume.NodeExpandVolume succeeded") {
		t.Fatalf("events = %q", evs)
	}
	// Before the next sync the desired state still holds the old claim: no second expansion.
	e.m.rec.signal()
	time.Sleep(100 * time.Millisecond)
	if plugin.count() != 1 {
		t.Fatalf("expanded %d times", plugin.count())
	}
}
