package status

import (
	"context"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	k8stesting "k8s.io/client-go/testing"

	"github.com/nodelet/nodelet/internal/lib/kubeclient/kubeclienttest"
	"github.com/nodelet/nodelet/internal/podspec/podutil"
)

func deletingPod(name string, uid types.UID) *v1.Pod {
	pod := apiPodWithStatus(name, uid)
	now := metav1.Now()
	grace := int64(30)
	pod.DeletionTimestamp, pod.DeletionGracePeriodSeconds = &now, &grace
	return pod
}

func TestAPISyncPodTerminatedDeletesAfterFinalStatus(t *testing.T) {
	pod := deletingPod("web", "uid-1")
	client, rec := newFakeAPI(t, pod)
	s := NewAPISyncer(kubeclienttest.FromClientset(client), nil)
	ctx := context.Background()
	final := runningStatus()
	final.Phase = v1.PodSucceeded
	s.StatusChanged(pod, final)
	s.PodTerminated(pod)
	s.syncDue(ctx)

	expectVerbs(t, rec, "get", "patch/status", "delete")
	if _, patch := rec.lastPatch(t); patch["status"].(map[string]any)["phase"] != "Succeeded" {
		t.Errorf("final status patch = %v", patch)
	}
	opts := rec.actions[2].(k8stesting.DeleteAction).GetDeleteOptions()
	if opts.GracePeriodSeconds == nil || *opts.GracePeriodSeconds != 0 {
		t.Errorf("delete grace = %v, want 0", opts.GracePeriodSeconds)
	}
	if opts.Preconditions == nil || opts.Preconditions.UID == nil || *opts.Preconditions.UID != "uid-1" {
		t.Errorf("delete preconditions = %+v, want the pod's UID", opts.Preconditions)
	}
	if len(s.pods) != 0 {
		t.Error("deleted pod is still tracked")
	}
}

func TestAPISyncPodTerminatedWaitsForStatus(t *testing.T) {
	pod := deletingPod("web", "uid-1")
	client, rec := newFakeAPI(t, pod)
	failing := true
	rec.fail = func(a k8stesting.Action) error {
		if a.GetVerb() == "patch" && failing {
			return apierrors.NewServiceUnavailable("overloaded")
		}
		return nil
	}
	s := NewAPISyncer(kubeclienttest.FromClientset(client), nil)
	ctx := context.Background()
	s.StatusChanged(pod, runningStatus())
	s.PodTerminated(pod)
	s.syncDue(ctx)
	expectVerbs(t, rec, "get", "patch/status") // no delete while the final status is not written

	failing = false
	s.pods["uid-1"].due = time.Time{}
	s.syncDue(ctx)
	expectVerbs(t, rec, "get", "patch/status", "patch/status", "delete")
}

func TestAPISyncPodTerminatedOnlyForDeletedAPIPods(t *testing.T) {
	notDeleting := apiPodWithStatus("web", "uid-1")
	static := deletingPod("static", "uid-2")
	static.Annotations = map[string]string{podutil.AnnotationSource: podutil.FileSource}
	mirror := deletingPod("mirror", "uid-3")
	mirror.Annotations = map[string]string{podutil.AnnotationMirror: "h"}
	client, rec := newFakeAPI(t, notDeleting, static, mirror)
	s := NewAPISyncer(kubeclienttest.FromClientset(client), nil)
	for _, p := range []*v1.Pod{notDeleting, static, mirror} {
		s.PodTerminated(p)
	}
	s.syncDue(context.Background())
	expectVerbs(t, rec)
	if len(s.pods) != 0 {
		t.Errorf("tracked %d pods", len(s.pods))
	}
}

func TestAPISyncPodTerminatedGoneAlready(t *testing.T) {
	pod := deletingPod("web", "uid-1")
	client, rec := newFakeAPI(t) // deleted by someone else meanwhile
	s := NewAPISyncer(kubeclienttest.FromClientset(client), nil)
	s.PodTerminated(pod)
	s.syncDue(context.Background())
	expectVerbs(t, rec, "delete")
	if len(s.pods) != 0 {
		t.Error("pod still tracked")
	}
}

func TestAPISyncForget(t *testing.T) {
	pod := apiPodWithStatus("web", "uid-1")
	client, rec := newFakeAPI(t, pod)
	s := NewAPISyncer(kubeclienttest.FromClientset(client), nil)
	s.StatusChanged(pod, runningStatus())
	s.Forget("uid-1")
	s.syncDue(context.Background())
	expectVerbs(t, rec)
}

func TestAPISyncRunWritesPromptly(t *testing.T) {
	pod := apiPodWithStatus("web", "uid-1")
	client, _ := newFakeAPI(t, pod)
	s := NewAPISyncer(kubeclienttest.FromClientset(client), nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()

	s.StatusChanged(pod, runningStatus())
	deadline := time.Now().Add(30 * time.Second) // a bound, not a speed requirement
	for getPod(t, client, "web").Status.Phase != v1.PodRunning {
		if time.Now().After(deadline) {
			t.Fatal("status not written by Run")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestMergeConditions(t *testing.T) {
	api := []v1.PodCondition{
		{Type: v1.PodReady, Status: v1.ConditionFalse},
		{Type: v1.DisruptionTarget, Status: v1.ConditionTrue, Reason: "EvictionByEvictionAPI"},
		{Type: "example.com/gate", Status: v1.ConditionTrue},
		{Type: v1.PodInitialized, Status: v1.ConditionTrue},
	}
	desired := []v1.PodCondition{
		{Type: v1.PodReady, Status: v1.ConditionTrue},
		{Type: v1.DisruptionTarget, Status: v1.ConditionFalse},
		{Type: v1.PodScheduled, Status: v1.ConditionTrue},
		{Type: v1.ContainersReady, Status: v1.ConditionTrue},
	}
	got := mergeConditions(api, desired)
	want := []v1.PodCondition{
		{Type: v1.PodReady, Status: v1.ConditionTrue},
		{Type: v1.DisruptionTarget, Status: v1.ConditionTrue, Reason: "EvictionByEvictionAPI"},
		{Type: "example.com/gate", Status: v1.ConditionTrue},
		// Initialized is nodelet's, and nodelet no longer reports it: dropped.
		{Type: v1.PodScheduled, Status: v1.ConditionTrue},
		{Type: v1.ContainersReady, Status: v1.ConditionTrue},
	}
	if !slices.Equal(got, want) {
		t.Errorf("merged conditions:\n got %+v\nwant %+v", got, want)
	}
}
