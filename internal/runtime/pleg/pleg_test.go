package pleg

import (
	"context"
	"sort"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/nodelet/nodelet/internal/runtime/container"
)

type fakeLister struct{ pods []*container.RunningPod }

func (f *fakeLister) GetPods(context.Context, bool) ([]*container.RunningPod, error) {
	return f.pods, nil
}

func pod(uid string, sandboxReady bool, containers map[string]container.ContainerState) *container.RunningPod {
	p := &container.RunningPod{UID: types.UID(uid)}
	p.Sandboxes = []*container.SandboxStatus{{ID: "sb-" + uid, Ready: sandboxReady}}
	for id, st := range containers {
		p.Containers = append(p.Containers, &container.ContainerStatus{ID: id, State: st})
	}
	return p
}

func drain(p *PLEG) []string {
	var out []string
	for {
		select {
		case ev := <-p.Events():
			out = append(out, string(ev.UID)+"/"+ev.ID+"="+string(ev.Type))
		default:
			sort.Strings(out)
			return out
		}
	}
}

func TestRelistEmitsChanges(t *testing.T) {
	lister := &fakeLister{}
	p := New(lister, nil, 0, nil)
	ctx := context.Background()

	lister.pods = []*container.RunningPod{pod("a", true, map[string]container.ContainerState{"c1": container.StateRunning})}
	p.Relist(ctx)
	want := []string{"a/c1=ContainerStarted", "a/sb-a=ContainerStarted"}
	if got := drain(p); !equal(got, want) {
		t.Fatalf("first relist: got %v want %v", got, want)
	}

	p.Relist(ctx)
	if got := drain(p); len(got) != 0 {
		t.Fatalf("unchanged relist emitted %v", got)
	}

	lister.pods = []*container.RunningPod{pod("a", true, map[string]container.ContainerState{
		"c1": container.StateExited, "c2": container.StateCreated,
	})}
	p.Relist(ctx)
	want = []string{"a/c1=ContainerDied", "a/c2=ContainerChanged"}
	if got := drain(p); !equal(got, want) {
		t.Fatalf("after exit: got %v want %v", got, want)
	}

	lister.pods = nil
	p.Relist(ctx)
	want = []string{"a/c1=ContainerRemoved", "a/c2=ContainerRemoved", "a/sb-a=ContainerRemoved"}
	if got := drain(p); !equal(got, want) {
		t.Fatalf("after removal: got %v want %v", got, want)
	}
	if err := p.Healthy(); err != nil {
		t.Fatalf("healthy after relist: %v", err)
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// The listing is made before the PLEG, as app makes it before the runtime the PLEG lists:
// a reader holding only the listing sees each relist, and when it was asked for.
func TestListingMadeBeforeThePLEG(t *testing.T) {
	listing := NewListing()
	if pods, at := listing.RunningPods(); pods != nil || !at.IsZero() {
		t.Fatal("a listing before any relist")
	}
	lister := &fakeLister{pods: []*container.RunningPod{pod("a", true, nil)}}
	p := New(lister, listing, 0, nil)
	before := time.Now()
	p.Relist(context.Background())
	pods, at := listing.RunningPods()
	if len(pods) != 1 || pods[0].UID != "a" || at.Before(before) {
		t.Fatalf("listing %v at %v after a relist started at %v", pods, at, before)
	}
	lister.pods = nil
	p.Relist(context.Background())
	if pods, _ := listing.RunningPods(); len(pods) != 0 {
		t.Errorf("listing %v after the pod went", pods)
	}
}
