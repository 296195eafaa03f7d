package app

import (
	"context"
	"errors"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodelet/nodelet/internal/pod"
)

// With TLS bootstrap in the background the API components start only once the node has a
// client certificate, and one still waiting when nodelet stops just ends.
func TestAPIComponentsWaitForTheClientCertificate(t *testing.T) {
	ready := make(chan struct{})
	c := &cluster{ready: ready}
	comps, ctx := newComponents(context.Background())
	started := make(chan struct{})
	c.startAPI(comps, "api thing", func(ctx context.Context) error { close(started); <-ctx.Done(); return nil })
	standalone := make(chan struct{})
	comps.start("standalone thing", func(ctx context.Context) error { close(standalone); <-ctx.Done(); return nil })
	err := comps.Run(ctx, func(context.Context) error {
		<-standalone
		select {
		case <-started:
			t.Fatal("an API component started before the node had a client certificate")
		default:
		}
		close(ready)
		select {
		case <-started:
		case <-time.After(10 * time.Second):
			t.Fatal("the API component never started after the certificate")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	never := &cluster{ready: make(chan struct{})}
	comps, ctx = newComponents(context.Background())
	never.startAPI(comps, "never", func(context.Context) error { return errors.New("ran") })
	if err := comps.Run(ctx, func(context.Context) error { return nil }); err != nil {
		t.Fatalf("a component still waiting for the certificate at stop: %v", err)
	}
}

// Mirror pods are not asked for (anonymously) before the node has a client certificate.
func TestMirrorPodsWaitForTheClientCertificate(t *testing.T) {
	m := mirrorAPI{pod.NewMirrorClient(nil, "n"), make(chan struct{})} // a call would panic
	static := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "kube-system"}}
	if err := m.Create(context.Background(), static); !errors.Is(err, errNoIdentity) {
		t.Errorf("Create before the certificate: %v", err)
	}
	if err := m.Delete(context.Background(), "kube-system", "s", nil); !errors.Is(err, errNoIdentity) {
		t.Errorf("Delete before the certificate: %v", err)
	}
}
