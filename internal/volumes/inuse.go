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

// errNoLongerWanted ends the wait of a volume no pod wants any more: it is not set up.
var errNoLongerWanted = errors.New("no pod wants the volume any more")

// inUseTracker holds the attachable volumes that are to be set up: the node lists them from
// the moment nodelet decides to set them up (as upstream lists its desired volumes) until
// they are torn down. Each is set up only once a node status update that listed it has
// reached the API server (upstream's reportedInUse): a read of the Node could be older than
// an update in flight that drops the name.
type inUseTracker struct {
	mu      sync.Mutex
	pending map[volumeKey]inUseEntry
	// wait is false when there is no Node to wait for (standalone) or nodelet attaches itself.
	wait    bool
	changed chan struct{} // a name was added: the node status should be posted
}

// inUseEntry is a pending volume's name and whether the last posted node status listed it.
type inUseEntry struct {
	name     v1.UniqueVolumeName
	reported bool
}

func newInUseTracker(wait bool) *inUseTracker {
	return &inUseTracker{pending: map[volumeKey]inUseEntry{}, wait: wait, changed: make(chan struct{}, 1)}
}

// InUseChanges fires when an attachable volume is about to be set up: the node status update
// that lists it should not wait for its period.
func (m *Manager) InUseChanges() <-chan struct{} { return m.inUse.changed }

// MarkReportedInUse takes the volumesInUse of a node status the API server has just
// accepted: the pending volumes it lists may be set up, the others wait for the next one.
func (m *Manager) MarkReportedInUse(names []v1.UniqueVolumeName) {
	t := m.inUse
	t.mu.Lock()
	defer t.mu.Unlock()
	for k, e := range t.pending {
		e.reported = slices.Contains(names, e.name)
		t.pending[k] = e
	}
}

// add records k as pending under name; a new name asks for a node status update.
func (t *inUseTracker) add(k volumeKey, name v1.UniqueVolumeName) {
	t.mu.Lock()
	old, known := t.pending[k]
	added := !known || old.name != name
	if added {
		t.pending[k] = inUseEntry{name: name}
	}
	t.mu.Unlock()
	if added {
		select {
		case t.changed <- struct{}{}:
		default:
		}
	}
}

// isReported says whether a posted node status listed k since it was added, and whether k
// is still pending at all.
func (t *inUseTracker) isReported(k volumeKey) (reported, pending bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e, pending := t.pending[k]
	return e.reported, pending
}

// names lists the pending names.
func (t *inUseTracker) names() []v1.UniqueVolumeName {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]v1.UniqueVolumeName, 0, len(t.pending))
	for _, e := range t.pending {
		out = append(out, e.name)
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
	if !m.inUse.wait {
		return nil
	}
	if reported, _ := m.inUse.isReported(k); reported {
		return nil
	}
	klog.V(3).InfoS("Waiting for the node status to list the volume in volumesInUse", "pod", klog.KObj(pod), "volume", k.name, "uniqueName", name)
	ctx, cancel := context.WithTimeout(ctx, inUseTimeout)
	defer cancel()
	poll := wait.Backoff{Duration: 50 * time.Millisecond, Factor: 2, Cap: time.Second, Steps: math.MaxInt32}
	for {
		switch reported, pending := m.inUse.isReported(k); {
		case reported:
			return nil
		case !pending:
			return errNoLongerWanted
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %w", name, errNotReportedInUse)
		case <-m.clock.After(poll.Step()):
		}
	}
}
