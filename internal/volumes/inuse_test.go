package volumes

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/nodelet/nodelet/internal/testutil"
)

// attachablePlugin is a fakePlugin whose volumes named att* the attach/detach controller
// attaches; each SetUp records whether the node had reported the volume in use by then.
type attachablePlugin struct {
	*fakePlugin
	node *fakeNodeStatus

	mu                sync.Mutex
	reportedAtSetUp   map[string]bool
	inUseNameFailures int
}

func inUseName(volume string) v1.UniqueVolumeName {
	return v1.UniqueVolumeName("kubernetes.io/csi/d^" + volume)
}

func (a *attachablePlugin) InUseName(_ context.Context, _ *v1.Pod, s *Spec) (v1.UniqueVolumeName, error) {
	if !strings.HasPrefix(s.Volume.Name, "att") {
		return "", nil
	}
	return inUseName(s.Volume.Name), nil
}

func (a *attachablePlugin) SetUp(ctx context.Context, pod *v1.Pod, s *Spec, dir string) (Mount, error) {
	a.mu.Lock()
	a.reportedAtSetUp[s.Volume.Name] = slices.Contains(a.node.get(), inUseName(s.Volume.Name))
	a.mu.Unlock()
	m, err := a.fakePlugin.SetUp(ctx, pod, s, dir)
	if n, _ := a.InUseName(ctx, pod, s); n != "" {
		m.InUse = n
	}
	return m, err
}

// fakeNodeStatus is the Node's status.volumesInUse as the API server last took it; post
// tells the volume manager, as the node status loop does after each update.
type fakeNodeStatus struct {
	mu    sync.Mutex
	inUse []v1.UniqueVolumeName
	m     *Manager
}

func (f *fakeNodeStatus) get() []v1.UniqueVolumeName {
	if f == nil {
		return nil // standalone: no Node
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.inUse)
}

func (f *fakeNodeStatus) post(inUse []v1.UniqueVolumeName) {
	f.mu.Lock()
	f.inUse = inUse
	f.mu.Unlock()
	f.m.MarkReportedInUse(inUse)
}

func newAttachableEnv(t *testing.T, node *fakeNodeStatus) (*testEnv, *attachablePlugin) {
	p := &attachablePlugin{fakePlugin: newFakePlugin(), node: node, reportedAtSetUp: map[string]bool{}}
	e := newTestEnv(t, t.TempDir(), func(o *Options) {
		o.Plugins = []Plugin{p}
		o.WaitReportedInUse = node != nil
	})
	if node != nil {
		node.m = e.m
	}
	return e, p
}

// As upstream: an attachable volume is listed in volumesInUse, a node status update is asked
// for, and only once the node's status carries the name is the volume set up. Volumes the
// controller does not attach do not wait.
func TestAttachableVolumeIsSetUpOnlyOnceReportedInUse(t *testing.T) {
	node := &fakeNodeStatus{}
	e, p := newAttachableEnv(t, node)
	e.run(t)
	pod := podWith("u1", "att", "plain")
	mounted := make(chan error, 1)
	go func() { mounted <- e.m.WaitForAttachAndMount(t.Context(), pod) }()

	select {
	case <-e.m.InUseChanges():
	case <-time.After(10 * time.Second):
		t.Fatal("no node status update was asked for")
	}
	if got := e.m.VolumesInUse(); !slices.Equal(got, []v1.UniqueVolumeName{inUseName("att")}) {
		t.Fatalf("volumesInUse before set-up = %v, want the attachable volume", got)
	}
	testutil.Eventually(t, "the other volume set up", func() bool { return p.setUpsOf("plain") == 1 })
	if n := p.setUpsOf("att"); n != 0 {
		t.Fatalf("the attachable volume was set up %d times before the node reported it in use", n)
	}

	node.post(e.m.VolumesInUse()) // the node status update
	for done := false; !done; {
		e.clock.Step(time.Second) // the wait looks again
		select {
		case err := <-mounted:
			if err != nil {
				t.Fatal(err)
			}
			done = true
		case <-time.After(10 * time.Millisecond):
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.reportedAtSetUp["att"] {
		t.Error("the attachable volume was set up before the node reported it in use")
	}
}

// Standalone there is no Node: attachable volumes are listed but do not wait.
func TestStandaloneDoesNotWaitForVolumesInUse(t *testing.T) {
	e, p := newAttachableEnv(t, nil)
	e.run(t)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := e.m.WaitForAttachAndMount(ctx, podWith("u1", "att")); err != nil {
		t.Fatal(err)
	}
	if p.setUpsOf("att") != 1 {
		t.Errorf("set up %d times", p.setUpsOf("att"))
	}
	if got := e.m.VolumesInUse(); !slices.Equal(got, []v1.UniqueVolumeName{inUseName("att")}) {
		t.Errorf("volumesInUse = %v", got)
	}
}

// A volume listed while it waited leaves volumesInUse when no pod wants it any more and it
// was never set up.
func TestVolumeInUseForgottenWhenNoLongerWanted(t *testing.T) {
	node := &fakeNodeStatus{}
	e, _ := newAttachableEnv(t, node)
	e.m.want(t.Context(), podWith("u1", "att"))
	e.m.rec.reconcile(t.Context()) // starts the set-up, which waits for the node
	testutil.Eventually(t, "the volume listed in use", func() bool { return len(e.m.VolumesInUse()) == 1 })
	e.m.desired.remove("u1")
	e.m.rec.reconcile(t.Context())
	if got := e.m.VolumesInUse(); len(got) != 0 {
		t.Errorf("volumesInUse = %v after the pod went, want none", got)
	}
	node.post([]v1.UniqueVolumeName{inUseName("att")})
	e.clock.Step(time.Second)
	e.m.rec.ops.Wait()
}

// A Node that lists the volume from an earlier pod's use is not enough: the new pod's volume
// is set up only once a status posted after it was listed carries it (an update in flight
// when it was listed may drop it).
func TestVolumeWaitsForAStatusPostedAfterItWasListed(t *testing.T) {
	node := &fakeNodeStatus{}
	e, p := newAttachableEnv(t, node)
	node.post([]v1.UniqueVolumeName{inUseName("att")}) // an earlier pod's volume
	e.m.want(t.Context(), podWith("u2", "att"))
	e.m.rec.reconcile(t.Context())
	testutil.Eventually(t, "the volume listed in use", func() bool { return len(e.m.VolumesInUse()) == 1 })

	node.post(nil) // the update that was in flight: built before the volume was listed
	e.clock.Step(time.Second)
	time.Sleep(50 * time.Millisecond)
	if n := p.setUpsOf("att"); n != 0 {
		t.Fatalf("set up %d times while the API server's volumesInUse did not list it", n)
	}
	node.post(e.m.VolumesInUse())
	testutil.Eventually(t, "the volume set up", func() bool {
		e.clock.Step(time.Second)
		return p.setUpsOf("att") == 1
	})
	e.m.rec.ops.Wait()
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.reportedAtSetUp["att"] {
		t.Error("set up before the node reported it in use")
	}
}
