// Package volumestest gives tests that drive the runtime manager directly a volume manager
// that sets a pod's volumes up when the runtime first asks for one, as the pod sync would
// have done before.
package volumestest

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/nodelet/nodelet/internal/volumes"
	"github.com/nodelet/nodelet/internal/volumes/plugins"
)

// OnDemand is a running standalone volume manager over rootDir; it stops with the test.
type OnDemand struct {
	*volumes.Manager
}

// Start runs a volume manager with every plugin, standalone, until t ends.
func Start(t *testing.T, rootDir string) OnDemand {
	// No Pods: every volume stays for the test's lifetime.
	m := volumes.New(volumes.Options{RootDir: rootDir, Plugins: plugins.All(plugins.Deps{})})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = m.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return OnDemand{m}
}

// HostPath sets pod's volumes up, then answers as the volume manager does.
func (o OnDemand) HostPath(pod *v1.Pod, name string) (string, bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := o.WaitForAttachAndMount(ctx, pod); err != nil {
		return "", false, err
	}
	return o.Manager.HostPath(pod, name)
}

// SubPath sets pod's volumes up, then answers as the volume manager does.
func (o OnDemand) SubPath(pod *v1.Pod, container string, index int, name, subPath string) (string, bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := o.WaitForAttachAndMount(ctx, pod); err != nil {
		return "", false, err
	}
	return o.Manager.SubPath(pod, container, index, name, subPath)
}

// DevicePath sets pod's volumes up, then answers as the volume manager does.
func (o OnDemand) DevicePath(pod *v1.Pod, name string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := o.WaitForAttachAndMount(ctx, pod); err != nil {
		return "", err
	}
	return o.Manager.DevicePath(pod, name)
}
