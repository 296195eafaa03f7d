package kubeclient_test

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/nodelet/nodelet/internal/kubeclient"
	"github.com/nodelet/nodelet/internal/kubeclient/kubeclienttest"
)

func TestEventSinkWritesInTheEventsNamespace(t *testing.T) {
	client := fake.NewClientset()
	sink := kubeclient.NewEventSink(kubeclienttest.FromClientset(client))
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
