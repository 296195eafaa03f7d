package volumes

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"
)

// Attachable is a Plugin some of whose volumes the attach/detach controller attaches to the
// node. Such a volume is set up only once the node's status.volumesInUse lists it, as
// upstream does: the controller never detaches a volume listed there, so a volume being
// mounted cannot be detached under the mount.
type Attachable interface {
	// InUseName is the volume's name in volumesInUse when the controller attaches it, ""
	// when it does not.
	InUseName(ctx context.Context, pod *v1.Pod, spec *Spec) (v1.UniqueVolumeName, error)
}

// inUseTimeout bounds the wait for a node status update to carry a volume's name.
const inUseTimeout = 2 * time.Minute

// errNotReportedInUse is upstream's reason for not mounting an attachable volume yet.
var errNotReportedInUse = errors.New("volume has not been added to the list of VolumesInUse in the node's volume status")

// inUseTracker holds the attachable volumes that are to be set up but are not yet: the node
// lists them from the moment nodelet decides to set them up (as upstream lists its desired
// volumes) until they are torn down.
type inUseTracker struct {
	mu      sync.Mutex
	pending map[volumeKey]v1.UniqueVolumeName
	// reported is the node's volumesInUse as last posted to or read from the API server;
	// nil means there is no Node to wait for (standalone) or nodelet attaches itself.
	reported func() []v1.UniqueVolumeName
	changed  chan struct{} // a name was added: the node status should be posted
}

func newInUseTracker(reported func() []v1.UniqueVolumeName) *inUseTracker {
	return &inUseTracker{pending: map[volumeKey]v1.UniqueVolumeName{}, reported: reported, changed: make(chan struct{}, 1)}
}

// InUseChanges fires when an attachable volume is about to be set up: the node status update
// that lists it should not wait for its period.
func (m *Manager) InUseChanges() <-chan struct{} { return m.inUse.changed }

// add records k as pending under name; a new name asks for a node status update.
func (t *inUseTracker) add(k volumeKey, name v1.UniqueVolumeName) {
	t.mu.Lock()
	old := t.pending[k]
	t.pending[k] = name
	t.mu.Unlock()
	if old != name {
		select {
		case t.changed <- struct{}{}:
		default:
		}
	}
}

// names lists the pending names.
func (t *inUseTracker) names() []v1.UniqueVolumeName {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]v1.UniqueVolumeName, 0, len(t.pending))
	for _, n := range t.pending {
		out = append(out, n)
	}
	return out
}

// forget drops the pending volumes keep rejects.
func (t *inUseTracker) forget(keep func(volumeKey) bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for k := range t.pending {
		if !keep(k) {
			delete(t.pending, k)
		}
	}
}

// awaitReportedInUse lists pod's volume k in volumesInUse when its plugin says the controller
// attaches it, and waits until a node status update has carried it to the API server.
func (m *Manager) awaitReportedInUse(ctx context.Context, pod *v1.Pod, k volumeKey, dv desiredVolume) error {
	a, ok := dv.plugin.(Attachable)
	if !ok {
		return nil
	}
	name, err := a.InUseName(ctx, pod, dv.spec)
	if err != nil || name == "" {
		return err
	}
	m.inUse.add(k, name)
	if m.inUse.reported == nil || slices.Contains(m.inUse.reported(), name) {
		return nil
	}
	klog.V(3).InfoS("Waiting for the node status to list the volume in volumesInUse", "pod", klog.KObj(pod), "volume", k.name, "uniqueName", name)
	ctx, cancel := context.WithTimeout(ctx, inUseTimeout)
	defer cancel()
	poll := wait.Backoff{Duration: 50 * time.Millisecond, Factor: 2, Cap: time.Second, Steps: math.MaxInt32}
	for !slices.Contains(m.inUse.reported(), name) {
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %w", name, errNotReportedInUse)
		case <-m.clock.After(poll.Step()):
		}
	}
	return nil
}
