package volumes

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// podAttachAndMountTimeout is how long a pod sync waits for the pod's volumes, upstream's.
const podAttachAndMountTimeout = 2*time.Minute + 3*time.Second

// ErrTimeout ends a wait that ran out of time. It is the context's deadline error, as
// upstream's wait returns it ("... failed to process volumes=[]: context deadline exceeded").
var ErrTimeout = context.DeadlineExceeded

// WaitForAttachAndMount puts pod (this version of it) in the desired state, asks for its
// Refresher volumes to be set up again, and waits until every volume its containers use is
// set up. It fails at once for volumes that cannot be resolved, and after 2m3s for volumes
// still not set up, naming them; the reconciler has posted a FailedMount event for each
// failed attempt meanwhile.
func (m *Manager) WaitForAttachAndMount(ctx context.Context, pod *v1.Pod) error {
	timeout := m.clock.NewTimer(m.mountTimeout)
	defer timeout.Stop()
	dp := m.want(ctx, pod)
	expected := expectedVolumes(pod)
	if len(expected) == 0 {
		return nil
	}
	if len(dp.failed) > 0 {
		return m.mountError(pod.UID, expected, dp, failures(dp))
	}
	err := m.waitUntil(ctx, timeout, func() bool { return len(m.unmounted(pod.UID, expected)) == 0 })
	if errors.Is(err, ErrTimeout) {
		return m.mountError(pod.UID, expected, dp, err)
	}
	if err == nil {
		klog.V(3).InfoS("All volumes are set up", "pod", klog.KObj(pod))
	}
	return err
}

// waitUntil waits until done holds, looking again at each change of the actual state.
func (m *Manager) waitUntil(ctx context.Context, timeout clock.Timer, done func() bool) error {
	for {
		changed := m.actual.changes()
		if done() {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		case <-timeout.C():
			return ErrTimeout
		}
	}
}

// want puts pod in the desired state, asks for its Refresher volumes to be set up again and
// wakes the reconciler.
func (m *Manager) want(ctx context.Context, pod *v1.Pod) *desiredPod {
	dp := m.resolve(ctx, pod)
	m.desired.set(dp)
	m.actual.markRefreshWanted(pod.UID)
	m.rec.signal()
	return dp
}

// failures joins why volumes could not be resolved, sorted by volume.
func failures(dp *desiredPod) error {
	names := slices.Sorted(maps.Keys(dp.failed))
	errs := make([]error, len(names))
	for i, n := range names {
		errs[i] = dp.failed[n]
	}
	return errors.Join(errs...)
}

// mountError says which of the expected volumes are not set up, in upstream's words. No
// plugin of nodelet's attaches, so none is ever unattached.
func (m *Manager) mountError(uid types.UID, expected []string, dp *desiredPod, cause error) error {
	failed := make([]string, 0, len(dp.failed))
	for _, n := range expected {
		if _, ok := dp.failed[n]; ok {
			failed = append(failed, n)
		}
	}
	return fmt.Errorf("unmounted volumes=%v, unattached volumes=%v, failed to process volumes=%v: %w",
		m.unmounted(uid, expected), []string{}, failed, cause)
}

// unmounted lists the names that are not usable volumes of pod uid.
func (m *Manager) unmounted(uid types.UID, names []string) []string {
	out := []string{}
	for _, n := range names {
		if _, ok := m.actual.mount(volumeKey{uid, n}); !ok {
			out = append(out, n)
		}
	}
	return out
}

// TearDownPod takes pod uid out of the desired state, its containers being gone, and waits
// until its volumes are torn down.
func (m *Manager) TearDownPod(ctx context.Context, uid types.UID) error {
	m.desired.remove(uid)
	m.rec.signal()
	timeout := m.clock.NewTimer(m.mountTimeout)
	defer timeout.Stop()
	err := m.waitUntil(ctx, timeout, func() bool { return len(m.actual.volumes(uid)) == 0 })
	if errors.Is(err, ErrTimeout) {
		names := slices.Sorted(maps.Keys(m.actual.volumes(uid)))
		return fmt.Errorf("volumes %v of pod %s are still set up: %w", names, uid, err)
	}
	return err
}
