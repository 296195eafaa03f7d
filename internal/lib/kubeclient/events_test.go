package kubeclient_test

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"

	"github.com/nodelet/nodelet/internal/lib/kubeclient"
	"github.com/nodelet/nodelet/internal/lib/kubeclient/kubeclienttest"
)

func TestEventSinkWritesInTheEventsNamespace(t *testing.T) {
	client := fake.NewClientset()
	sink := kubeclient.NewEventSink(t.Context(), kubeclienttest.FromClientset(client), nil)
	event := &v1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e1", Namespace: "team-a"}, Reason: "Started", Count: 1}
	if _, err := sink.Create(event); err != nil {
		t.Fatal(err)
	}
	event.Count = 2
	if _, err := sink.Update(event); err != nil {
		t.Fatal(err)
	}
	if _, err := sink.Patch(event, []byte(`{"count":3}`)); err != nil {
		t.Fatal(err)
	}
	got, err := client.CoreV1().Events("team-a").Get(context.Background(), "e1", metav1.GetOptions{})
	if err != nil || got.Count != 3 || got.Reason != "Started" {
		t.Fatalf("stored event %+v, %v", got, err)
	}
	var verbs []string
	for _, a := range client.Actions() {
		if a.GetNamespace() != "team-a" || a.GetResource().Resource != "events" {
			t.Errorf("action %s on %s in %q", a.GetVerb(), a.GetResource().Resource, a.GetNamespace())
		}
		verbs = append(verbs, a.GetVerb())
	}
	if len(verbs) != 4 || verbs[0] != "create" || verbs[1] != "update" || verbs[2] != "patch" {
		t.Errorf("verbs %v", verbs)
	}
}

func TestFromClientsetKeepsNilNil(t *testing.T) {
	var cs *fake.Clientset
	if kubeclienttest.FromClientset(cs) != nil {
		t.Fatal("typed nil clientset became a non-nil client")
	}
}

// Events recorded before the node has an API identity neither block the recorder nor go out
// anonymously: they wait in the broadcaster's queue and are posted once ready is closed.
func TestEventSinkAfterHoldsEventsUntilReady(t *testing.T) {
	client := fake.NewClientset()
	ready := make(chan struct{})
	client.PrependReactor("*", "events", func(k8stesting.Action) (bool, runtime.Object, error) {
		select {
		case <-ready:
		default:
			t.Error("an event was posted before the node had an identity")
		}
		return false, nil, nil
	})
	b := record.NewBroadcaster()
	defer b.Shutdown()
	b.StartRecordingToSink(kubeclient.NewEventSink(t.Context(), kubeclienttest.FromClientset(client), ready))
	recorder := b.NewRecorder(kubeclient.Scheme, v1.EventSource{Component: "kubelet"})
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "static", Namespace: "kube-system", UID: "u1"}}
	for i := range 5 {
		recorder.Eventf(pod, v1.EventTypeNormal, "Pulled", "image %d", i) // returns at once
	}
	if n := len(client.Actions()); n != 0 {
		t.Fatalf("%d API calls before the node had an identity", n)
	}
	close(ready)
	deadline := time.Now().Add(10 * time.Second)
	for {
		list, err := client.CoreV1().Events("kube-system").List(context.Background(), metav1.ListOptions{})
		if err == nil && len(list.Items) == 5 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("events posted after ready: %v (err %v), want 5", len(list.Items), err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
