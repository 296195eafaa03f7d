package podsync

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodelet/nodelet/internal/pod"
	"github.com/nodelet/nodelet/internal/podspec/podutil"
)

type fakeMirrorAPI struct{ calls []string }

func (f *fakeMirrorAPI) Create(_ context.Context, static *v1.Pod) error {
	f.calls = append(f.calls, "create "+static.Name)
	return nil
}

func (f *fakeMirrorAPI) Delete(_ context.Context, ns, name string, uid *types.UID) error {
	f.calls = append(f.calls, "delete "+name+" "+string(*uid))
	return nil
}

func staticPod(hash string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-n1", Namespace: "default", UID: types.UID(hash),
		Annotations: map[string]string{podutil.AnnotationSource: podutil.FileSource, podutil.AnnotationHash: hash}}}
}

func mirrorPod(hash, uid string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-n1", Namespace: "default", UID: types.UID(uid),
		Annotations: map[string]string{podutil.AnnotationMirror: hash}}}
}

func TestMirrorsEnsure(t *testing.T) {
	pods := pod.NewManager()
	api := &fakeMirrorAPI{}
	m := &Mirrors{Pods: pods, API: api}
	ctx := context.Background()

	if err := m.Ensure(ctx, staticPod("h1")); err != nil || len(api.calls) != 1 || api.calls[0] != "create web-n1" {
		t.Fatalf("no mirror yet: calls %v err %v", api.calls, err)
	}
	api.calls = nil
	pods.SetMirror(mirrorPod("h1", "m1"))
	if err := m.Ensure(ctx, staticPod("h1")); err != nil || len(api.calls) != 0 {
		t.Fatalf("current mirror: calls %v", api.calls)
	}
	// The manifest changed: the old version's mirror is replaced.
	if err := m.Ensure(ctx, staticPod("h2")); err != nil || len(api.calls) != 2 || api.calls[0] != "delete web-n1 m1" {
		t.Fatalf("stale mirror: calls %v", api.calls)
	}
}

func TestMirrorsDeleteOnlyItsOwnVersion(t *testing.T) {
	pods := pod.NewManager()
	api := &fakeMirrorAPI{}
	m := &Mirrors{Pods: pods, API: api}
	pods.SetMirror(mirrorPod("h2", "m2"))
	// Removing the old version (h1) must leave the new version's mirror alone.
	if err := m.Delete(context.Background(), staticPod("h1")); err != nil || len(api.calls) != 0 {
		t.Fatalf("deleted another version's mirror: %v", api.calls)
	}
	if err := m.Delete(context.Background(), staticPod("h2")); err != nil || len(api.calls) != 1 {
		t.Fatalf("own mirror not deleted: %v", api.calls)
	}
}
