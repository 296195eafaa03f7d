// Package volumes is the volume manager: it keeps the volumes of the pods that should run
// here (the desired state) and what is set up (the actual state), and a reconciler sets up
// and tears down volumes outside the pod workers, through one plugin per volume type. The pod
// sync waits for a pod's volumes before it creates containers, and hands the pod back once
// its containers are gone; the runtime asks where each volume is. At start the actual state
// is rebuilt from what is under the root dir, so a restart neither sets up live volumes again
// nor leaks those of pods that went away meanwhile.
package volumes

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/nodelet/nodelet/internal/lib/fsutil"
	"github.com/nodelet/nodelet/internal/volumes/mount"
)

// Options configure the volume manager.
type Options struct {
	// RootDir holds the pods' volumes under RootDir/pods/<uid>/volumes/<plugin>/<name>.
	RootDir string
	// Plugins set up the volume types nodelet supports, the first that can wins.
	Plugins []Plugin
	// Pods says when a pod's containers are gone, so its volumes may go; nil keeps every
	// volume.
	Pods PodStates
	// Claims reads PersistentVolumeClaims and PersistentVolumes; nil (standalone) refuses
	// persistentVolumeClaim volumes.
	Claims ClaimGetter
	// Resizer records in a claim's status that its volume grew on the node; nil: mounted
	// volumes are never grown.
	Resizer ClaimResizer
	// Node returns this node, for PersistentVolumes' node affinity; nil refuses volumes that
	// have one.
	Node func() *v1.Node
	// Recorder receives FailedMount events; nil drops them.
	Recorder record.EventRecorder
	// Mounter is the host's mount table (default mount.Host{}).
	Mounter mount.Mounter
	// Clock drives back-off and timeouts (default the real clock).
	Clock clock.Clock
	// WaitReportedInUse sets an Attachable plugin's volume up only once a node status
	// update listing it in volumesInUse has reached the API server (MarkReportedInUse).
	// False sets them up at once (standalone, where there is no Node, or when nodelet and
	// not the attach/detach controller attaches).
	WaitReportedInUse bool
}

// Manager is the volume manager. Start it with Run.
type Manager struct {
	rootDir string
	plugins []Plugin
	claims  ClaimGetter
	resizer ClaimResizer
	node    func() *v1.Node
	mounter mount.Mounter
	clock   clock.Clock
	desired *desiredState
	actual  *actualState
	inUse   *inUseTracker
	rec     *reconciler
	// mountTimeout bounds WaitForAttachAndMount and TearDownPod.
	mountTimeout time.Duration
}

// New returns a manager whose actual state holds the volumes found under opts.RootDir.
func New(opts Options) *Manager {
	if opts.Recorder == nil {
		opts.Recorder = &record.FakeRecorder{} // nil channel: events are dropped
	}
	if opts.Mounter == nil {
		opts.Mounter = mount.Host{}
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Pods == nil {
		opts.Pods = neverGone{}
	}
	m := &Manager{
		rootDir: opts.RootDir, plugins: opts.Plugins, claims: opts.Claims, resizer: opts.Resizer, node: opts.Node,
		mounter: opts.Mounter, clock: opts.Clock, mountTimeout: podAttachAndMountTimeout,
		desired: newDesiredState(), actual: newActualState(), inUse: newInUseTracker(opts.WaitReportedInUse),
	}
	m.rec = &reconciler{
		m: m, pods: opts.Pods, recorder: opts.Recorder, clock: opts.Clock, wake: make(chan struct{}, 1),
		busy: map[volumeKey]bool{}, retries: map[volumeKey]*retry{},
	}
	m.reconstruct()
	return m
}

// neverGone keeps every volume: nothing says when containers are gone.
type neverGone struct{}

func (neverGone) ContainersGone(types.UID) bool { return false }

// Run runs the reconciler until ctx ends.
func (m *Manager) Run(ctx context.Context) error {
	m.rec.run(ctx)
	return nil
}

func (m *Manager) podDir(uid types.UID) string {
	return filepath.Join(m.rootDir, "pods", string(uid))
}

func (m *Manager) volumeDir(uid types.UID, plugin, name string) string {
	return filepath.Join(m.podDir(uid), "volumes", plugin, name)
}

// HostPath returns where pod's volume name is on the host and whether containers may only
// read it. The volume must be set up: the pod sync waited for it. A subPath of it goes
// through SubPath.
func (m *Manager) HostPath(pod *v1.Pod, name string) (string, bool, error) {
	mnt, err := m.filesystem(pod, name)
	return mnt.Path, mnt.ReadOnly, err
}

// SELinuxRelabel tells whether the runtime should relabel pod's volume name for its
// containers on an SELinux host (what its plugin said at set-up).
func (m *Manager) SELinuxRelabel(pod *v1.Pod, name string) bool {
	mnt, ok := m.actual.mount(volumeKey{pod.UID, name})
	return ok && mnt.SELinuxRelabel
}

// filesystem returns pod's volume name, set up, of volumeMode Filesystem.
func (m *Manager) filesystem(pod *v1.Pod, name string) (Mount, error) {
	mnt, ok := m.actual.mount(volumeKey{pod.UID, name})
	if !ok {
		if !hasVolume(pod, name) {
			return Mount{}, fmt.Errorf("volume mount %q: no such volume", name)
		}
		return Mount{}, fmt.Errorf("volume %q is not set up", name)
	}
	if mnt.Block {
		return Mount{}, fmt.Errorf("volume %s has volumeMode Block, but is specified in volumeMounts", name)
	}
	return mnt, nil
}

// DevicePath returns the block device of pod's volume name, for a container's volumeDevices.
// The volume must be set up: the pod sync waited for it.
func (m *Manager) DevicePath(pod *v1.Pod, name string) (string, error) {
	mnt, ok := m.actual.mount(volumeKey{pod.UID, name})
	switch {
	case !ok && !hasVolume(pod, name):
		return "", fmt.Errorf("volume device %q: no such volume", name)
	case !ok:
		return "", fmt.Errorf("volume %q is not set up", name)
	case !mnt.Block:
		return "", fmt.Errorf("volume %s has volumeMode Filesystem, but is specified in volumeDevices", name)
	}
	return mnt.Path, nil
}

// VolumesInUse lists, sorted, the attachable volumes that are set up for pods or about to
// be: the node reports them so the attach/detach controller leaves them attached until they
// are torn down.
func (m *Manager) VolumesInUse() []v1.UniqueVolumeName {
	out := m.inUse.names()
	for _, mv := range m.actual.all() {
		if mv.mount.InUse != "" {
			out = append(out, mv.mount.InUse)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func hasVolume(pod *v1.Pod, name string) bool {
	for _, v := range pod.Spec.Volumes {
		if v.Name == name {
			return true
		}
	}
	return false
}

// RemovePodDir removes pods/<uid> once nothing of the pod is set up or mounted below it
// (subPath mounts left of volumes that are gone are unmounted first).
func (m *Manager) RemovePodDir(uid types.UID) error {
	if vols := m.actual.volumes(uid); len(vols) > 0 {
		return fmt.Errorf("pod %s still has %d volumes set up", uid, len(vols))
	}
	if err := m.cleanAllSubPaths(uid); err != nil {
		return fmt.Errorf("pod %s: %w", uid, err)
	}
	dir := m.podDir(uid)
	points, err := m.mounter.MountsUnder(dir)
	if err != nil {
		return fmt.Errorf("reading the mount table: %w", err)
	}
	if len(points) > 0 {
		return fmt.Errorf("pod %s: still mounted below its directory: %v", uid, points)
	}
	return fsutil.RemoveAllIn(filepath.Join(m.rootDir, "pods"), string(uid))
}

// Name names the volume manager's per-pod state: the pod's directory.
func (m *Manager) Name() string { return "pod directory" }

// ReleasePod removes the pod's directory (RemovePodDir); the pod's own release path calls it.
func (m *Manager) ReleasePod(uid types.UID) error { return m.RemovePodDir(uid) }
