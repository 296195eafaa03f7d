package kuberuntime

import (
	"context"
	"errors"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/internal/runtime/cri"
)

// ReasonPostStartHookError is the waiting reason of a container whose postStart hook failed.
const ReasonPostStartHookError = "PostStartHookError"

// postStartTimeout bounds a postStart handler; the kubelet has none, but a hung handler must
// not hold the pod's worker forever.
const postStartTimeout = 5 * time.Minute

// runPostStart runs c's postStart handler right after container id started, before the next
// container of the pod starts. When it fails the container is killed: the restart policy
// decides what comes next, as for a crash.
func (m *Manager) runPostStart(ctx context.Context, pod *v1.Pod, c *v1.Container, id string, sb *sandboxInfo, ref *v1.ObjectReference) error {
	if c.Lifecycle == nil || c.Lifecycle.PostStart == nil {
		return nil
	}
	podIP := func() (string, error) {
		if len(sb.ips) == 0 {
			return "", errors.New("pod has no IP")
		}
		return sb.ips[0], nil
	}
	err := m.runHandler(ctx, id, c, c.Lifecycle.PostStart, podIP, postStartTimeout)
	if err == nil {
		return nil
	}
	msg := fmt.Sprintf("PostStartHook failed: %v", err)
	m.recorder.Event(ref, v1.EventTypeWarning, "FailedPostStartHook", msg)
	klog.InfoS("PostStart hook failed; killing the container", "pod", klog.KObj(pod), "container", c.Name, "err", err)
	if err := m.cri.StopContainer(ctx, id, max(graceSeconds(pod), 0)); err != nil && !cri.IsNotFound(err) {
		klog.ErrorS(err, "Cannot kill the container whose postStart hook failed", "pod", klog.KObj(pod), "container", c.Name)
	}
	return errors.New(msg)
}
