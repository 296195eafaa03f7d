// Package runtimeclass resolves a pod's runtimeClassName to the CRI handler its RuntimeClass
// names, from a watch of the cluster's RuntimeClasses.
package runtimeclass

import (
	"context"
	"errors"
	"fmt"

	v1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/nodelet/nodelet/internal/lib/kubeclient"
)

// ErrNotSynced: the RuntimeClasses have not been listed once yet; the sandbox is retried.
var ErrNotSynced = errors.New("RuntimeClasses have not been read from the API server yet")

// Manager answers handler look-ups from memory.
type Manager struct {
	informer cache.SharedIndexInformer
}

// New returns a manager; start it with Run.
func New(client kubeclient.Interface) *Manager {
	classes := client.NodeV1().RuntimeClasses()
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			return classes.List(ctx, opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			return classes.Watch(ctx, opts)
		},
	}
	informer := cache.NewSharedIndexInformer(lw, &nodev1.RuntimeClass{}, 0, cache.Indexers{})
	_ = informer.SetTransform(func(obj any) (any, error) {
		if rc, ok := obj.(*nodev1.RuntimeClass); ok {
			rc.ManagedFields = nil // never read
		}
		return obj, nil
	})
	return &Manager{informer: informer}
}

// Run watches until ctx ends.
func (m *Manager) Run(ctx context.Context) error {
	m.informer.RunWithContext(ctx)
	return nil
}

// Handler is the CRI runtime handler for pod: "" (the runtime's default) without a
// runtimeClassName, else its RuntimeClass's handler. A missing class is a NotFound error
// worded as upstream's ("runtimeclass.node.k8s.io \"x\" not found").
func (m *Manager) Handler(pod *v1.Pod) (string, error) {
	name := ""
	if pod.Spec.RuntimeClassName != nil {
		name = *pod.Spec.RuntimeClassName
	}
	if name == "" {
		return "", nil
	}
	if !m.informer.HasSynced() {
		return "", ErrNotSynced
	}
	obj, ok, err := m.informer.GetStore().GetByKey(name)
	if err != nil {
		return "", fmt.Errorf("failed to lookup RuntimeClass %s: %w", name, err)
	}
	if !ok {
		return "", apierrors.NewNotFound(nodev1.Resource("runtimeclass"), name)
	}
	return obj.(*nodev1.RuntimeClass).Handler, nil
}

// Standalone is the look-up without an API server: a pod that names a RuntimeClass cannot
// be run as asked, so its sandbox fails saying why rather than running under the default.
type Standalone struct{}

// Handler is "" for a pod without a runtimeClassName and an error for any other.
func (Standalone) Handler(pod *v1.Pod) (string, error) {
	if pod.Spec.RuntimeClassName == nil || *pod.Spec.RuntimeClassName == "" {
		return "", nil
	}
	return "", fmt.Errorf("runtimeClassName %q needs the API server to resolve its RuntimeClass; nodelet runs standalone", *pod.Spec.RuntimeClassName)
}
