package status

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

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

var (
	apiT0 = metav1.NewTime(time.Date(2025, 1, 1, 10, 0, 0, 0, time.UTC))
	apiT1 = metav1.NewTime(time.Date(2025, 1, 1, 10, 0, 5, 0, time.UTC))
)

// podsResource is what a failing reactor names in its errors.
var podsResource = schema.GroupResource{Resource: "pods"}

func apiPodWithStatus(name string, uid types.UID) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: uid},
		Spec:       v1.PodSpec{NodeName: "node1", Containers: []v1.Container{{Name: "main", Image: "busybox"}}},
		Status: v1.PodStatus{
			Phase:             v1.PodPending,
			QOSClass:          v1.PodQOSBestEffort,
			NominatedNodeName: "from-scheduler",
			Conditions: []v1.PodCondition{
				{Type: v1.PodScheduled, Status: v1.ConditionTrue, LastTransitionTime: apiT0},
				{Type: "example.com/gate", Status: v1.ConditionTrue, LastTransitionTime: apiT0},
			},
		},
	}
}

// runningStatus is what nodelet computes for a started pod.
func runningStatus() v1.PodStatus {
	cond := func(t v1.PodConditionType) v1.PodCondition {
		return v1.PodCondition{Type: t, Status: v1.ConditionTrue, LastTransitionTime: apiT1}
	}
	return v1.PodStatus{
		Phase:    v1.PodRunning,
		QOSClass: v1.PodQOSBestEffort,
		PodIP:    "10.85.0.7", PodIPs: []v1.PodIP{{IP: "10.85.0.7"}},
		StartTime: &apiT1,
		Conditions: []v1.PodCondition{
			cond(v1.PodReadyToStartContainers), cond(v1.PodInitialized), cond(v1.PodReady),
			cond(v1.ContainersReady), cond(v1.PodScheduled),
		},
		ContainerStatuses: []v1.ContainerStatus{{
			Name: "main", Ready: true, Image: "busybox", ContainerID: "containerd://abc",
			State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: apiT1}},
		}},
	}
}

// recorder notes the API calls the syncer makes; fail, when set, makes calls fail.
type recorder struct {
	actions []k8stesting.Action
	fail    func(k8stesting.Action) error
}

func newFakeAPI(t *testing.T, objs ...runtime.Object) (*fake.Clientset, *recorder) {
	t.Helper()
	client := fake.NewClientset(objs...)
	rec := &recorder{}
	client.PrependReactor("*", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		rec.actions = append(rec.actions, a)
		if rec.fail != nil {
			if err := rec.fail(a); err != nil {
				return true, nil, err
			}
		}
		return false, nil, nil
	})
	return client, rec
}

func (r *recorder) verbs() []string {
	var out []string
	for _, a := range r.actions {
		v := a.GetVerb()
		if a.GetSubresource() != "" {
			v += "/" + a.GetSubresource()
		}
		out = append(out, v)
	}
	return out
}

func (r *recorder) reset() { r.actions = nil }

// lastPatch returns the last status patch, decoded.
func (r *recorder) lastPatch(t *testing.T) (string, map[string]any) {
	t.Helper()
	for i := len(r.actions) - 1; i >= 0; i-- {
		if p, ok := r.actions[i].(k8stesting.PatchAction); ok {
			if p.GetPatchType() != types.StrategicMergePatchType || p.GetSubresource() != "status" {
				t.Fatalf("patch type %s subresource %q, want strategic merge on status", p.GetPatchType(), p.GetSubresource())
			}
			var out map[string]any
			if err := json.Unmarshal(p.GetPatch(), &out); err != nil {
				t.Fatal(err)
			}
			return p.GetName(), out
		}
	}
	t.Fatal("no patch sent")
	return "", nil
}

func getPod(t *testing.T, client *fake.Clientset, name string) *v1.Pod {
	t.Helper()
	pod, err := client.CoreV1().Pods("default").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return pod
}

func conditionTypes(conds []v1.PodCondition) []string {
	var out []string
	for _, c := range conds {
		out = append(out, string(c.Type))
	}
	return out
}

func findCondition(conds []v1.PodCondition, t v1.PodConditionType) *v1.PodCondition {
	for i := range conds {
		if conds[i].Type == t {
			return &conds[i]
		}
	}
	return nil
}

func expectVerbs(t *testing.T, rec *recorder, want ...string) {
	t.Helper()
	if got := rec.verbs(); !slices.Equal(got, want) {
		t.Fatalf("API calls = %v, want %v", got, want)
	}
}

func TestAPISyncPatchesOwnedFieldsOnly(t *testing.T) {
	pod := apiPodWithStatus("web", "uid-1")
	client, rec := newFakeAPI(t, pod)
	s := NewAPISyncer(kubeclienttest.FromClientset(client), nil)
	ctx := context.Background()

	s.StatusChanged(pod, runningStatus())
	s.syncDue(ctx)
	expectVerbs(t, rec, "get", "patch/status")
	name, patch := rec.lastPatch(t)
	if name != "web" {
		t.Errorf("patched %q", name)
	}
	if uid := patch["metadata"].(map[string]any)["uid"]; uid != "uid-1" {
		t.Errorf("patch metadata = %v, want the UID precondition", patch["metadata"])
	}
	for _, c := range patch["status"].(map[string]any)["conditions"].([]any) {
		if typ := c.(map[string]any)["type"]; !ownedConditions[v1.PodConditionType(typ.(string))] {
			t.Errorf("patch touches condition %v nodelet does not own", typ)
		}
	}

	got := getPod(t, client, "web").Status
	if got.Phase != v1.PodRunning || got.PodIP != "10.85.0.7" || len(got.ContainerStatuses) != 1 {
		t.Errorf("status not written: %+v", got)
	}
	if got.NominatedNodeName != "from-scheduler" {
		t.Errorf("nominatedNodeName lost: %q", got.NominatedNodeName)
	}
	wantTypes := []string{"PodScheduled", "example.com/gate", "PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady"}
	if types := conditionTypes(got.Conditions); !slices.Equal(types, wantTypes) {
		t.Errorf("conditions = %v, want %v", types, wantTypes)
	}
	if c := findCondition(got.Conditions, v1.PodScheduled); !c.LastTransitionTime.Equal(&apiT0) {
		t.Errorf("PodScheduled was replaced by nodelet's: %+v", c)
	}

	// The same status again costs nothing, not even a read.
	rec.reset()
	s.StatusChanged(pod, runningStatus())
	s.syncDue(ctx)
	expectVerbs(t, rec)

	// A real change is patched from the cache, without a read.
	notReady := runningStatus()
	notReady.Conditions[2].Status = v1.ConditionFalse
	s.StatusChanged(pod, notReady)
	s.syncDue(ctx)
	expectVerbs(t, rec, "patch/status")
	if c := findCondition(getPod(t, client, "web").Status.Conditions, v1.PodReady); c.Status != v1.ConditionFalse {
		t.Errorf("Ready = %+v", c)
	}
}

func TestAPISyncIgnoresSubSecondTimes(t *testing.T) {
	pod := apiPodWithStatus("web", "uid-1")
	client, rec := newFakeAPI(t, pod)
	s := NewAPISyncer(kubeclienttest.FromClientset(client), nil)
	s.StatusChanged(pod, runningStatus())
	s.syncDue(context.Background())

	rec.reset()
	st := runningStatus()
	later := metav1.NewTime(apiT1.Add(300 * time.Millisecond)) // the API keeps seconds only
	st.StartTime = &later
	st.Conditions[0].LastTransitionTime = later
	s.StatusChanged(pod, st)
	s.syncDue(context.Background())
	expectVerbs(t, rec)
}

func TestAPISyncNeverLeavesTerminalPhase(t *testing.T) {
	pod := apiPodWithStatus("job", "uid-1")
	pod.Status.Phase = v1.PodFailed
	client, _ := newFakeAPI(t, pod)
	s := NewAPISyncer(kubeclienttest.FromClientset(client), nil)
	s.StatusChanged(pod, runningStatus())
	s.syncDue(context.Background())
	if got := getPod(t, client, "job").Status.Phase; got != v1.PodFailed {
		t.Errorf("phase = %s, want Failed kept", got)
	}
}

func TestAPISyncStaticPodGoesToMirror(t *testing.T) {
	static := &v1.Pod{ObjectMeta: metav1.ObjectMeta{
		Name: "etcd-node1", Namespace: "default", UID: "static-uid",
		Annotations: map[string]string{podutil.AnnotationSource: podutil.FileSource, podutil.AnnotationHash: "h1"},
	}}
	mirror := &v1.Pod{ObjectMeta: metav1.ObjectMeta{
		Name: "etcd-node1", Namespace: "default", UID: "mirror-uid",
		Annotations: map[string]string{podutil.AnnotationMirror: "h1"},
	}}
	client, rec := newFakeAPI(t, mirror)
	var current *v1.Pod
	s := NewAPISyncer(kubeclienttest.FromClientset(client), func(p *v1.Pod) (*v1.Pod, bool) {
		if p.UID != "static-uid" {
			t.Errorf("lookup for %s", p.UID)
		}
		return current, current != nil
	})
	ctx := context.Background()

	s.StatusChanged(static, runningStatus())
	s.syncDue(ctx)
	expectVerbs(t, rec) // no mirror yet: nothing to write to
	if next := s.syncDue(ctx); time.Until(next) < s.resync/2 {
		t.Errorf("pending static pod retried at %v, want about one resync from now", next)
	}

	current = mirror
	s.MirrorChanged(static)
	s.syncDue(ctx)
	expectVerbs(t, rec, "get", "patch/status")
	if _, patch := rec.lastPatch(t); patch["metadata"].(map[string]any)["uid"] != "mirror-uid" {
		t.Errorf("patch metadata = %v, want the mirror's UID", patch["metadata"])
	}
	if got := getPod(t, client, "etcd-node1").Status.Phase; got != v1.PodRunning {
		t.Errorf("mirror phase = %s", got)
	}
	// A replaced mirror has a new UID: read and patched afresh.
	if err := client.CoreV1().Pods("default").Delete(ctx, "etcd-node1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	replaced := mirror.DeepCopy()
	replaced.UID = "mirror-uid-2"
	if _, err := client.CoreV1().Pods("default").Create(ctx, replaced, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rec.reset()
	current = replaced
	s.MirrorChanged(static)
	s.syncDue(ctx)
	expectVerbs(t, rec, "get", "patch/status")
	if _, patch := rec.lastPatch(t); patch["metadata"].(map[string]any)["uid"] != "mirror-uid-2" {
		t.Errorf("patch metadata = %v, want the new mirror's UID", patch["metadata"])
	}
	// Mirror pods themselves are never reported.
	rec.reset()
	s.StatusChanged(mirror, runningStatus())
	s.syncDue(ctx)
	expectVerbs(t, rec)
	if _, ok := s.pods["mirror-uid"]; ok {
		t.Error("syncer keeps an entry for a mirror pod")
	}
}

func TestAPISyncForgetsPodsGoneFromAPI(t *testing.T) {
	client, rec := newFakeAPI(t)
	s := NewAPISyncer(kubeclienttest.FromClientset(client), nil)
	ctx := context.Background()
	missing := apiPodWithStatus("gone", "uid-gone")
	s.StatusChanged(missing, runningStatus())
	s.syncDue(ctx)
	expectVerbs(t, rec, "get")
	if len(s.pods) != 0 {
		t.Error("pod missing from the API is still tracked")
	}

	// A pod recreated under the same name is someone else's: never patched.
	client, rec = newFakeAPI(t, apiPodWithStatus("web", "uid-new"))
	s = NewAPISyncer(kubeclienttest.FromClientset(client), nil)
	s.StatusChanged(apiPodWithStatus("web", "uid-old"), runningStatus())
	s.syncDue(ctx)
	expectVerbs(t, rec, "get")
	if len(s.pods) != 0 {
		t.Error("pod replaced in the API is still tracked")
	}

	// Deleted after the cache was filled: the patch's NotFound forgets it.
	pod := apiPodWithStatus("web", "uid-1")
	client, rec = newFakeAPI(t, pod)
	s = NewAPISyncer(kubeclienttest.FromClientset(client), nil)
	s.StatusChanged(pod, runningStatus())
	s.syncDue(ctx)
	if err := client.CoreV1().Pods("default").Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	rec.reset()
	changed := runningStatus()
	changed.Phase = v1.PodSucceeded
	s.StatusChanged(pod, changed)
	s.syncDue(ctx)
	expectVerbs(t, rec, "patch/status")
	if len(s.pods) != 0 {
		t.Error("pod deleted from the API is still tracked")
	}
}

func TestAPISyncRefetchesOnConflict(t *testing.T) {
	pod := apiPodWithStatus("web", "uid-1")
	client, rec := newFakeAPI(t, pod)
	conflicts := 1
	rec.fail = func(a k8stesting.Action) error {
		if a.GetVerb() == "patch" && conflicts > 0 {
			conflicts--
			return apierrors.NewConflict(podsResource, "web", errors.New("try again"))
		}
		return nil
	}
	s := NewAPISyncer(kubeclienttest.FromClientset(client), nil)
	ctx := context.Background()
	s.StatusChanged(pod, runningStatus())
	s.syncDue(ctx) // get, patch: conflict
	s.syncDue(ctx) // due at once: get, patch
	expectVerbs(t, rec, "get", "patch/status", "get", "patch/status")
	if got := getPod(t, client, "web").Status.Phase; got != v1.PodRunning {
		t.Errorf("phase = %s after retry", got)
	}
}

func TestAPISyncBacksOffOnErrors(t *testing.T) {
	pod := apiPodWithStatus("web", "uid-1")
	client, rec := newFakeAPI(t, pod)
	failing := true
	rec.fail = func(a k8stesting.Action) error {
		if a.GetVerb() == "patch" && failing {
			return apierrors.NewInternalError(errors.New("etcd down"))
		}
		return nil
	}
	s := NewAPISyncer(kubeclienttest.FromClientset(client), nil)
	s.retryBase, s.resync = time.Hour, 2*time.Hour // so "not due yet" holds however slow the test runs
	ctx := context.Background()
	s.StatusChanged(pod, runningStatus())
	next := s.syncDue(ctx)
	expectVerbs(t, rec, "get", "patch/status")
	if next.IsZero() || !next.After(time.Now()) {
		t.Fatalf("retry at %v, want later", next)
	}
	rec.reset()
	s.syncDue(ctx)
	expectVerbs(t, rec) // not due yet

	// When due, the retry uses the cache (a server error says nothing about the pod).
	failing = false
	s.pods["uid-1"].due = time.Time{}
	s.syncDue(ctx)
	expectVerbs(t, rec, "patch/status")
	if s.pods["uid-1"].needsWork() {
		t.Error("entry still needs work after a successful retry")
	}
}

func TestBackoffGrowsToResync(t *testing.T) {
	s := NewAPISyncer(nil, nil)
	if s.backoff(1) != apiRetryBase || s.backoff(2) != 2*apiRetryBase || s.backoff(50) != apiResync {
		t.Errorf("backoff = %v %v %v", s.backoff(1), s.backoff(2), s.backoff(50))
	}
}

func TestAPISyncRecreatedPodIsNeverPatched(t *testing.T) {
	old := apiPodWithStatus("web", "uid-old")
	client, rec := newFakeAPI(t, old)
	// As the API server does: a patch naming another UID is refused as invalid (uid is immutable).
	rec.fail = func(a k8stesting.Action) error {
		p, ok := a.(k8stesting.PatchAction)
		if !ok {
			return nil
		}
		var patch struct {
			Metadata struct{ UID types.UID } `json:"metadata"`
		}
		_ = json.Unmarshal(p.GetPatch(), &patch)
		current, err := client.Tracker().Get(schema.GroupVersionResource{Version: "v1", Resource: "pods"}, "default", "web")
		if err == nil && current.(*v1.Pod).UID != patch.Metadata.UID {
			return apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, "web", nil)
		}
		return nil
	}
	s := NewAPISyncer(kubeclienttest.FromClientset(client), nil)
	ctx := context.Background()
	s.StatusChanged(old, runningStatus())
	s.syncDue(ctx)

	// Deleted and recreated under the same name while the syncer's cache names the old UID.
	if err := client.CoreV1().Pods("default").Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().Pods("default").Create(ctx, apiPodWithStatus("web", "uid-new"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rec.reset()
	final := runningStatus()
	final.Phase = v1.PodSucceeded
	s.StatusChanged(old, final)
	s.syncDue(ctx) // patch refused
	s.syncDue(ctx) // re-read: another pod, so ours is gone
	expectVerbs(t, rec, "patch/status", "get")
	if len(s.pods) != 0 {
		t.Error("old pod still tracked")
	}
	if got := getPod(t, client, "web"); got.UID != "uid-new" || got.Status.Phase != v1.PodPending {
		t.Errorf("recreated pod was touched: uid %s phase %s", got.UID, got.Status.Phase)
	}
}

func TestAPISyncReconcileRestoresOverwrittenStatus(t *testing.T) {
	pod := apiPodWithStatus("web", "uid-1")
	client, rec := newFakeAPI(t, pod)
	s := NewAPISyncer(kubeclienttest.FromClientset(client), nil)
	ctx := context.Background()
	s.StatusChanged(pod, runningStatus())
	s.syncDue(ctx)

	// The watch shows nodelet's own status: nothing to do.
	seen := getPod(t, client, "web")
	rec.reset()
	s.Reconcile(seen)
	s.syncDue(ctx)
	expectVerbs(t, rec)

	// Someone overwrote the phase: nodelet writes it back, without a read.
	overwritten := getPod(t, client, "web")
	overwritten.Status.Phase = v1.PodPending
	if _, err := client.CoreV1().Pods("default").UpdateStatus(ctx, overwritten, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	rec.reset()
	s.Reconcile(overwritten)
	s.syncDue(ctx)
	expectVerbs(t, rec, "patch/status")
	if got := getPod(t, client, "web").Status.Phase; got != v1.PodRunning {
		t.Errorf("phase = %s, want Running restored", got)
	}

	// Pods the syncer never wrote are no business of Reconcile.
	rec.reset()
	s.Reconcile(apiPodWithStatus("other", "uid-2"))
	s.syncDue(ctx)
	expectVerbs(t, rec)
}
