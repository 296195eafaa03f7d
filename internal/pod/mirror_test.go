package pod

import (
	"context"
	"errors"
	"testing"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/nodelet/nodelet/internal/lib/kubeclient/kubeclienttest"
	"github.com/nodelet/nodelet/internal/podspec/podutil"
)

const testNode = "node1"

func testNodeObject() *v1.Node {
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: testNode, UID: "node-uid"}}
}

func staticPod() *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "web-node1", Namespace: "default", UID: "static-uid", ResourceVersion: "7",
			Labels: map[string]string{"app": "web"},
			Annotations: map[string]string{
				podutil.AnnotationSource: podutil.FileSource,
				podutil.AnnotationHash:   "abc123",
			},
		},
		Spec: v1.PodSpec{
			NodeName:   testNode,
			Containers: []v1.Container{{Name: "main", Image: "busybox"}},
		},
		Status: v1.PodStatus{Phase: v1.PodRunning},
	}
}

func TestMirrorCreateContent(t *testing.T) {
	client := fake.NewClientset(testNodeObject())
	mc := NewMirrorClient(kubeclienttest.FromClientset(client), testNode)
	static := staticPod()
	if err := mc.Create(context.Background(), static); err != nil {
		t.Fatal(err)
	}
	got, err := client.CoreV1().Pods("default").Get(context.Background(), "web-node1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.UID == static.UID || got.ResourceVersion == static.ResourceVersion {
		t.Errorf("mirror kept the static pod's UID %q or resourceVersion %q", got.UID, got.ResourceVersion)
	}
	if got.Annotations[podutil.AnnotationMirror] != "abc123" {
		t.Errorf("mirror annotation = %q, want the static hash", got.Annotations[podutil.AnnotationMirror])
	}
	if got.Labels["app"] != "web" || got.Spec.Containers[0].Image != "busybox" || got.Spec.NodeName != testNode {
		t.Errorf("mirror does not copy labels/spec: %+v", got)
	}
	if got.Status.Phase != "" {
		t.Errorf("mirror copied the static status: %+v", got.Status)
	}
	if len(got.OwnerReferences) != 1 {
		t.Fatalf("want one owner reference, got %+v", got.OwnerReferences)
	}
	ref := got.OwnerReferences[0]
	if ref.APIVersion != "v1" || ref.Kind != "Node" || ref.Name != testNode || ref.UID != "node-uid" {
		t.Errorf("owner reference = %+v, want the node", ref)
	}
	if ref.Controller == nil || !*ref.Controller || ref.BlockOwnerDeletion != nil {
		t.Errorf("owner reference must be controller without blockOwnerDeletion (NodeRestriction): %+v", ref)
	}
	if !podutil.IsMirror(got) || MirrorHash(got) != "abc123" || !MatchesStatic(got, static) {
		t.Errorf("helpers do not recognise the mirror")
	}
	// The static pod itself must be left as it was.
	if _, ok := static.Annotations[podutil.AnnotationMirror]; ok {
		t.Error("Create modified the static pod's annotations")
	}
}

func TestMirrorCreateAlreadyExistsIsFine(t *testing.T) {
	client := fake.NewClientset(testNodeObject())
	mc := NewMirrorClient(kubeclienttest.FromClientset(client), testNode)
	if err := mc.Create(context.Background(), staticPod()); err != nil {
		t.Fatal(err)
	}
	if err := mc.Create(context.Background(), staticPod()); err != nil {
		t.Fatalf("second create: %v", err)
	}
}

func TestMirrorCreateErrors(t *testing.T) {
	mc := NewMirrorClient(kubeclienttest.FromClientset(fake.NewClientset()), testNode)
	if err := mc.Create(context.Background(), staticPod()); !apierrors.IsNotFound(errors.Unwrap(err)) {
		t.Errorf("without a node object: got %v, want the node NotFound", err)
	}
	noHash := staticPod()
	delete(noHash.Annotations, podutil.AnnotationHash)
	mc = NewMirrorClient(kubeclienttest.FromClientset(fake.NewClientset(testNodeObject())), testNode)
	if err := mc.Create(context.Background(), noHash); err == nil {
		t.Error("static pod without hash: want an error")
	}
}

func TestMirrorDelete(t *testing.T) {
	mirror := staticPod()
	mirror.UID = "mirror-uid"
	client := fake.NewClientset(mirror)
	var opts []metav1.DeleteOptions
	client.PrependReactor("delete", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		opts = append(opts, a.(k8stesting.DeleteAction).GetDeleteOptions())
		return false, nil, nil
	})
	mc := NewMirrorClient(kubeclienttest.FromClientset(client), testNode)
	uid := types.UID("mirror-uid")
	if err := mc.Delete(context.Background(), "default", "web-node1", &uid); err != nil {
		t.Fatal(err)
	}
	if len(opts) != 1 || opts[0].GracePeriodSeconds == nil || *opts[0].GracePeriodSeconds != 0 {
		t.Fatalf("delete options = %+v, want grace 0", opts)
	}
	if opts[0].Preconditions == nil || opts[0].Preconditions.UID == nil || *opts[0].Preconditions.UID != uid {
		t.Errorf("delete options = %+v, want UID precondition", opts[0])
	}
	if _, err := client.CoreV1().Pods("default").Get(context.Background(), "web-node1", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("mirror still there: %v", err)
	}
	// Gone already: fine.
	if err := mc.Delete(context.Background(), "default", "web-node1", nil); err != nil {
		t.Errorf("deleting a missing mirror: %v", err)
	}
}

func TestMirrorDeleteErrors(t *testing.T) {
	client := fake.NewClientset()
	fail := error(apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, "web-node1", errors.New("uid mismatch")))
	client.PrependReactor("delete", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, fail
	})
	mc := NewMirrorClient(kubeclienttest.FromClientset(client), testNode)
	uid := types.UID("old")
	if err := mc.Delete(context.Background(), "default", "web-node1", &uid); err != nil {
		t.Errorf("UID precondition failure means the mirror is gone: got %v", err)
	}
	fail = apierrors.NewInternalError(errors.New("boom"))
	if err := mc.Delete(context.Background(), "default", "web-node1", &uid); err == nil {
		t.Error("server error: want an error")
	}
}

func TestMatchesStatic(t *testing.T) {
	static := staticPod()
	mirror := staticPod()
	mirror.Annotations[podutil.AnnotationMirror] = "abc123"
	if !MatchesStatic(mirror, static) {
		t.Error("same hash: want match")
	}
	stale := mirror.DeepCopy()
	stale.Annotations[podutil.AnnotationMirror] = "old"
	if MatchesStatic(stale, static) {
		t.Error("other hash: want no match")
	}
	deleting := mirror.DeepCopy()
	deleting.DeletionTimestamp = &metav1.Time{}
	if MatchesStatic(deleting, static) {
		t.Error("mirror being deleted: want no match")
	}
	if MatchesStatic(static, static) || podutil.IsMirror(static) || MirrorHash(static) != "" {
		t.Error("a pod without mirror annotation is no mirror")
	}
}

func TestMirrorSet(t *testing.T) {
	set := NewMirrorSet()
	static := staticPod()
	if _, ok := set.Lookup(static); ok {
		t.Fatal("empty set found a mirror")
	}
	mirror := staticPod()
	mirror.UID = "mirror-uid"
	mirror.Annotations[podutil.AnnotationMirror] = "old"
	set.Set(mirror)
	if got, ok := set.Get("web-node1_default"); !ok || got.UID != "mirror-uid" {
		t.Fatalf("Get = %v, %v", got, ok)
	}
	if _, ok := set.Lookup(static); ok {
		t.Error("Lookup returned a stale mirror")
	}
	fresh := mirror.DeepCopy()
	fresh.Annotations[podutil.AnnotationMirror] = "abc123"
	set.Set(fresh)
	if got, ok := set.Lookup(static); !ok || got != fresh {
		t.Errorf("Lookup = %v, %v, want the fresh mirror", got, ok)
	}
	set.Delete(FullName(static))
	if _, ok := set.Get("web-node1_default"); ok {
		t.Error("Delete left the mirror")
	}
}

// An orphaned mirror is deleted even when the first attempt fails, under its own UID.
func TestMirrorDeleteOrphanRetries(t *testing.T) {
	mirror := staticPod()
	mirror.UID = "mirror-uid"
	client := fake.NewClientset(mirror)
	attempts := 0
	client.PrependReactor("delete", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		attempts++
		if attempts == 1 {
			return true, nil, apierrors.NewServiceUnavailable("try again")
		}
		if uid := a.(k8stesting.DeleteAction).GetDeleteOptions().Preconditions.UID; uid == nil || *uid != "mirror-uid" {
			t.Errorf("delete precondition UID = %v, want mirror-uid", uid)
		}
		return false, nil, nil
	})
	mc := NewMirrorClient(kubeclienttest.FromClientset(client), testNode)
	mc.DeleteOrphan(context.Background(), mirror)
	if attempts != 2 {
		t.Errorf("delete attempts = %d, want 2", attempts)
	}
	if _, err := client.CoreV1().Pods("default").Get(context.Background(), mirror.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("mirror still there: %v", err)
	}
}
