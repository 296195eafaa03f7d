package kuberuntime

import (
	"context"
	"fmt"
	"strconv"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodelet/nodelet/internal/runtime/containeropts"
)

// verifyRunAsNonRoot refuses a container that must run as non-root but would run as root:
// by its runAsUser, or, without one, by its image's user.
func (m *Manager) verifyRunAsNonRoot(ctx context.Context, pod *v1.Pod, c *v1.Container, sc *runtimeapi.LinuxContainerSecurityContext, imageRef string) error {
	if !containeropts.RunAsNonRoot(pod, c) {
		return nil
	}
	where := fmt.Sprintf("(pod: %q, container: %s)", formatPod(pod), c.Name)
	if sc.RunAsUser != nil {
		if sc.RunAsUser.Value == 0 {
			return fmt.Errorf("container's runAsUser breaks non-root policy %s", where)
		}
		return nil
	}
	uid, user, err := m.images.ImageUser(ctx, imageRef)
	if err != nil {
		return fmt.Errorf("cannot read the image's user to verify runAsNonRoot: %w", err)
	}
	if uid == nil && user != "" {
		if n, err := strconv.ParseInt(user, 10, 64); err == nil {
			uid = &n
		} else {
			return fmt.Errorf("container has runAsNonRoot and image has non-numeric user (%s), cannot verify user is non-root %s", user, where)
		}
	}
	if uid == nil || *uid == 0 {
		return fmt.Errorf("container has runAsNonRoot and image will run as root %s", where)
	}
	return nil
}
