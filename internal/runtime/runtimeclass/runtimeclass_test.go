package runtimeclass

import (
	"context"
	"errors"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/nodelet/nodelet/internal/lib/kubeclient/kubeclienttest"
)

func podWithClass(name string) *v1.Pod {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}}
	if name != "" {
		pod.Spec.RuntimeClassName = &name
	}
	return pod
}

func TestHandlerFollowsTheRuntimeClasses(t *testing.T) {
	cs := fake.NewSimpleClientset(&nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "sandboxed"}, Handler: "runsc"})
	m := New(kubeclienttest.FromClientset(cs))
	if _, err := m.Handler(podWithClass("sandboxed")); !errors.Is(err, ErrNotSynced) {
		t.Fatalf("before the first list: err %v, want ErrNotSynced", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go m.Run(ctx)

	if h, err := m.Handler(podWithClass("")); h != "" || err != nil {
		t.Errorf("no class: %q, %v; want the default handler", h, err)
	}
	waitHandler(t, m, "sandboxed", "runsc")
	_, err := m.Handler(podWithClass("missing"))
	if !apierrors.IsNotFound(err) || err.Error() != `runtimeclass.node.k8s.io "missing" not found` {
		t.Errorf("missing class: %v, want upstream's NotFound", err)
	}

	// A class created later is seen through the watch.
	if _, err := cs.NodeV1().RuntimeClasses().Create(ctx, &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "late"}, Handler: "kata"}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitHandler(t, m, "late", "kata")
}

func waitHandler(t *testing.T, m *Manager, class, want string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		h, err := m.Handler(podWithClass(class))
		if err == nil && h == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("class %s: handler %q, %v; want %q", class, h, err, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestStandaloneRefusesARuntimeClass(t *testing.T) {
	if h, err := (Standalone{}).Handler(podWithClass("")); h != "" || err != nil {
		t.Errorf("no class: %q, %v", h, err)
	}
	if _, err := (Standalone{}).Handler(podWithClass("gvisor")); err == nil {
		t.Error("a class was accepted without an API server")
	}
}
