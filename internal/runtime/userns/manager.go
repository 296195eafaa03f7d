// Package userns gives each pod with hostUsers: false its own range of host IDs for its user
// namespace, taken from the node's range in blocks of IDsPerPod. A pod's range is kept in its
// pod directory (RootDir/pods/<uid>/userns, upstream's file and format), so that a restart of
// nodelet maps the pod's files to the same IDs, and it is freed when the pod is removed.
package userns

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"golang.org/x/sys/unix"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/internal/lib/atomicfile"
	"github.com/nodelet/nodelet/internal/lib/fsutil"
)

// MappingsFile is the name of the file in the pod directory holding its range.
const MappingsFile = "userns"

// fileMappings is the file's content: one UID and one identical GID mapping of container ID 0.
type fileMappings struct {
	UIDMappings []idMapping `json:"uidMappings"`
	GIDMappings []idMapping `json:"gidMappings"`
}

type idMapping struct {
	HostID      uint32 `json:"hostId"`
	ContainerID uint32 `json:"containerId"`
	Length      uint32 `json:"length"`
}

// Manager allocates pods' ranges. It is safe for concurrent use.
type Manager struct {
	podsDir    string
	firstBlock uint32 // the node's first ID / IDsPerPod
	blocks     uint32 // how many pod ranges the node's range holds

	mu    sync.Mutex
	byPod map[types.UID]uint32 // pod → block index, relative to firstBlock
	owner map[uint32]types.UID
}

// New returns a Manager over the node's range that re-reads the ranges recorded under
// podsDir (RootDir/pods). A recorded file it cannot read or that conflicts is logged and
// skipped, not an error: the node (and every other pod) starts, and that pod's Mapping keeps
// failing with the file's fault, as handing it another range would leave its files owned by
// IDs it no longer has.
func New(podsDir string, node Range, maxPods int) (*Manager, error) {
	if err := node.validate(maxPods); err != nil {
		return nil, err
	}
	m := &Manager{
		podsDir: podsDir, firstBlock: node.First / IDsPerPod, blocks: node.Length / IDsPerPod,
		byPod: map[types.UID]uint32{}, owner: map[uint32]types.UID{},
	}
	entries, err := os.ReadDir(podsDir)
	if errors.Is(err, os.ErrNotExist) {
		return m, nil
	}
	if err != nil {
		return nil, fmt.Errorf("user namespaces: list pods: %w", err)
	}
	for _, e := range entries {
		uid := types.UID(e.Name())
		if !e.IsDir() || fsutil.CheckName(e.Name()) != nil {
			continue
		}
		r, found, err := m.readFile(uid)
		if err == nil && found {
			err = m.record(uid, r)
		}
		if err != nil {
			klog.ErrorS(err, "Skipping the pod's user namespace file: the pod will fail to start until it is repaired or removed", "podUID", uid, "file", m.filePath(uid))
		}
	}
	return m, nil
}

// Mapping returns the pod's range: the recorded one, else a new one, recorded before it is
// returned.
func (m *Manager) Mapping(uid types.UID) (Range, error) {
	if err := fsutil.CheckName(string(uid)); err != nil {
		return Range{}, fmt.Errorf("user namespace: pod UID: %w", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	r, found, err := m.readFile(uid)
	if err == nil && found {
		err = m.record(uid, r)
	}
	if err != nil {
		return Range{}, fmt.Errorf("user namespace: %w (remove %s to give the pod a new range)", err, m.filePath(uid))
	}
	if found {
		return r, nil
	}
	if block, ok := m.byPod[uid]; ok {
		// Its file went (the pod directory was removed under it): write it again.
		r = m.rangeOf(block)
	} else if r, err = m.allocate(uid); err != nil {
		return Range{}, fmt.Errorf("create user namespace: %w", err)
	}
	if err := m.writeFile(uid, r); err != nil {
		m.releaseLocked(uid)
		return Range{}, fmt.Errorf("create user namespace: %w", err)
	}
	return r, nil
}

// Release frees the pod's range and removes its file; a pod without one is not an error.
func (m *Manager) Release(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.releaseLocked(uid)
}

// Allocated returns the pods holding a range (for tests and debugging).
func (m *Manager) Allocated() map[types.UID]Range {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[types.UID]Range{}
	for uid, block := range m.byPod {
		out[uid] = m.rangeOf(block)
	}
	return out
}

func (m *Manager) releaseLocked(uid types.UID) {
	block, ok := m.byPod[uid]
	if !ok {
		return
	}
	delete(m.byPod, uid)
	delete(m.owner, block)
	if fsutil.CheckName(string(uid)) == nil {
		if err := fsutil.RemoveIn(m.podsDir, string(uid), MappingsFile); err != nil {
			klog.ErrorS(err, "Failed to remove the pod's user namespace file", "podUID", uid)
		}
	}
	klog.V(4).InfoS("Released the pod's user namespace range", "podUID", uid)
}

// allocate takes the lowest free block. When none is free it first frees the blocks of pods
// whose file is gone (a pod directory removed while nodelet was down, as orphans are).
func (m *Manager) allocate(uid types.UID) (Range, error) {
	for pass := 0; pass < 2; pass++ {
		for block := uint32(0); block < m.blocks; block++ {
			if _, taken := m.owner[block]; !taken {
				m.owner[block], m.byPod[uid] = uid, block
				klog.V(4).InfoS("Allocated a user namespace range", "podUID", uid, "first", m.rangeOf(block).First)
				return m.rangeOf(block), nil
			}
		}
		m.reclaimLocked()
	}
	return Range{}, fmt.Errorf("all %d user namespace ranges of the node are in use", m.blocks)
}

func (m *Manager) reclaimLocked() {
	for uid := range m.byPod {
		if _, err := os.Lstat(m.filePath(uid)); errors.Is(err, os.ErrNotExist) {
			m.releaseLocked(uid)
		}
	}
}

// record registers a range read from a pod's file.
func (m *Manager) record(uid types.UID, r Range) error {
	if r.Length != IDsPerPod || r.First%IDsPerPod != 0 {
		return fmt.Errorf("range %d+%d is not one whole pod range of %d IDs", r.First, r.Length, IDsPerPod)
	}
	block := r.First/IDsPerPod - m.firstBlock
	if r.First/IDsPerPod < m.firstBlock || block >= m.blocks {
		return fmt.Errorf("range %d+%d is outside the node's range", r.First, r.Length)
	}
	if prev, ok := m.byPod[uid]; ok && prev != block {
		return fmt.Errorf("pod already holds range %d", m.rangeOf(prev).First)
	}
	if other, ok := m.owner[block]; ok && other != uid {
		return fmt.Errorf("range %d+%d is already held by pod %s", r.First, r.Length, other)
	}
	m.owner[block], m.byPod[uid] = uid, block
	return nil
}

func (m *Manager) rangeOf(block uint32) Range {
	return Range{First: (m.firstBlock + block) * IDsPerPod, Length: IDsPerPod}
}

// filePath is the pod's file; uid must have passed fsutil.CheckName.
func (m *Manager) filePath(uid types.UID) string {
	return filepath.Join(m.podsDir, string(uid), MappingsFile)
}

// readFile reads and checks the pod's file as upstream does: one mapping of container ID 0,
// the same for UIDs and GIDs.
func (m *Manager) readFile(uid types.UID) (Range, bool, error) {
	path := m.filePath(uid)
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return Range{}, false, nil
	}
	if err != nil {
		return Range{}, false, fmt.Errorf("read %s: %w", path, err)
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	var content fileMappings
	if err := json.NewDecoder(f).Decode(&content); err != nil {
		return Range{}, false, fmt.Errorf("invalid user namespace mappings file %s: %w", path, err)
	}
	if len(content.UIDMappings) != 1 || len(content.GIDMappings) != 1 || content.UIDMappings[0] != content.GIDMappings[0] {
		return Range{}, false, fmt.Errorf("invalid user namespace mappings file %s: want one mapping, the same for UIDs and GIDs", path)
	}
	if u := content.UIDMappings[0]; u.ContainerID != 0 {
		return Range{}, false, fmt.Errorf("invalid user namespace mappings file %s: container ID 0 must be mapped", path)
	}
	return Range{First: content.UIDMappings[0].HostID, Length: content.UIDMappings[0].Length}, true, nil
}

func (m *Manager) writeFile(uid types.UID, r Range) error {
	mapping := []idMapping{{HostID: r.First, ContainerID: 0, Length: r.Length}}
	data, err := json.Marshal(fileMappings{UIDMappings: mapping, GIDMappings: mapping})
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(m.podsDir, string(uid)), 0o750); err != nil {
		return err
	}
	return atomicfile.WriteFile(m.filePath(uid), data, 0o600)
}

// Name names the per-pod state: the pod's ID range.
func (m *Manager) Name() string { return "user namespace" }

// ReleasePod frees the pod's ID range (Release).
func (m *Manager) ReleasePod(uid types.UID) error {
	m.Release(uid)
	return nil
}
