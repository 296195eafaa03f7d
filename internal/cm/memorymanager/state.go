package memorymanager

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"

	v1 "k8s.io/api/core/v1"

	"github.com/nodelet/nodelet/internal/cm/checkpoint"
)

// StateFile is the memory manager's state file in the root directory, upstream's name.
const StateFile = "memory_manager_state"

// The state types below are upstream's checkpoint format: their field names, order and JSON
// tags, and (through stateTypeNames) their type names, make the file's checksum.

// memoryTable is one kind of memory (memory, hugepages-2Mi, …) on one NUMA node, in bytes.
type memoryTable struct {
	TotalMemSize   uint64 `json:"total"`
	SystemReserved uint64 `json:"systemReserved"`
	Allocatable    uint64 `json:"allocatable"`
	Reserved       uint64 `json:"reserved"`
	Free           uint64 `json:"free"`
}

// numaNodeState is one NUMA node's memory and the containers placed on it.
type numaNodeState struct {
	// NumberOfAssignments counts the blocks that include this node.
	NumberOfAssignments int                              `json:"numberOfAssignments"`
	MemoryMap           map[v1.ResourceName]*memoryTable `json:"memoryMap"`
	// Cells is the group of nodes this node's blocks span (itself alone when single-node):
	// a node serves either single-node blocks or one group's multi-node blocks, never both.
	Cells []int `json:"cells"`
}

// numaNodeMap is every NUMA node's state, by node ID.
type numaNodeMap map[int]*numaNodeState

// block is memory of one kind set aside for a container on a group of NUMA nodes.
type block struct {
	NUMAAffinity []int           `json:"numaAffinity"`
	Type         v1.ResourceName `json:"type"`
	Size         uint64          `json:"size"`
}

// assignments are the containers' blocks, by pod UID and container name.
type assignments map[string]map[string][]block

// checksum is the state file's checksum (upstream's checksum.Checksum).
type checksum uint64

// stateFile is what the state file holds.
type stateFile struct {
	PolicyName   string      `json:"policyName"`
	MachineState numaNodeMap `json:"machineState"`
	Entries      assignments `json:"entries,omitempty"`
	Checksum     checksum    `json:"checksum"`
}

// stateTypeNames maps each state type's printed name to upstream's, for the checksum.
var stateTypeNames = map[string]string{
	"memorymanager.memoryTable":   "state.MemoryTable",
	"memorymanager.numaNodeState": "state.NUMANodeState",
	"memorymanager.numaNodeMap":   "state.NUMANodeMap",
	"memorymanager.block":         "state.Block",
	"memorymanager.assignments":   "state.ContainerMemoryAssignments",
	"memorymanager.checksum":      "checksum.Checksum",
	"memorymanager.stateFile":     "state.MemoryManagerCheckpoint",
}

// sum is the checksum of f as upstream computes it: over f with a zero checksum.
func (f *stateFile) sum() checksum {
	saved := f.Checksum
	f.Checksum = 0
	defer func() { f.Checksum = saved }()
	return checksum(checkpoint.Sum(f, stateTypeNames))
}

// readState reads the state file in dir; found is false when there is none. A file whose
// checksum does not match, or that was written under another policy, is an error: upstream
// refuses to start on either, and so does nodelet.
func readState(dir, policy string) (f *stateFile, found bool, err error) {
	path := filepath.Join(dir, StateFile)
	// Maps made before decoding, as upstream's are: a file without entries sums as an empty map.
	f = &stateFile{MachineState: numaNodeMap{}, Entries: assignments{}}
	found, err = checkpoint.Read(path, f)
	if err == nil && found {
		err = checkpoint.Verify(path, uint64(f.Checksum), uint64(f.sum()))
	}
	if err != nil {
		return nil, found, fmt.Errorf("memory manager: %w (drain the node before: the pods' memory assignments go with the file)", err)
	}
	if found && f.PolicyName != policy {
		return nil, true, fmt.Errorf("memory manager: [memorymanager] configured policy %q differs from state checkpoint policy %q; drain the node and remove %s to change the policy", policy, f.PolicyName, path)
	}
	return f, found, nil
}

// writeState stores the state in dir, checksummed.
func writeState(dir, policy string, machine numaNodeMap, entries assignments) error {
	f := &stateFile{PolicyName: policy, MachineState: machine.clone(), Entries: entries.clone()}
	f.Checksum = f.sum()
	return checkpoint.Write(filepath.Join(dir, StateFile), f)
}

// errNoState says a state file has assignments but no machine state.
var errNoState = errors.New("[memorymanager] machine state can not be empty when it has memory assignments")

// clone copies the machine state deeply; the copy's maps and slices are never nil, as
// upstream's are when it writes them.
func (m numaNodeMap) clone() numaNodeMap {
	out := numaNodeMap{}
	for id, n := range m {
		c := &numaNodeState{NumberOfAssignments: n.NumberOfAssignments, Cells: append([]int{}, n.Cells...)}
		if n.MemoryMap != nil {
			c.MemoryMap = map[v1.ResourceName]*memoryTable{}
			for name, t := range n.MemoryMap {
				copied := *t
				c.MemoryMap[name] = &copied
			}
		}
		out[id] = c
	}
	return out
}

// clone copies the assignments deeply.
func (a assignments) clone() assignments {
	out := assignments{}
	for uid, containers := range a {
		out[uid] = map[string][]block{}
		for name, blocks := range containers {
			out[uid][name] = cloneBlocks(blocks)
		}
	}
	return out
}

func cloneBlocks(blocks []block) []block {
	out := make([]block, len(blocks))
	for i, b := range blocks {
		out[i] = block{NUMAAffinity: slices.Clone(b.NUMAAffinity), Type: b.Type, Size: b.Size}
	}
	return out
}

// get returns the blocks of a container, nil when it has none.
func (a assignments) get(uid, container string) []block {
	return a[uid][container]
}

// set records a container's blocks.
func (a assignments) set(uid, container string, blocks []block) {
	if a[uid] == nil {
		a[uid] = map[string][]block{}
	}
	a[uid][container] = blocks
}

// remove forgets a container, and its pod once it has none left.
func (a assignments) remove(uid, container string) {
	delete(a[uid], container)
	if len(a[uid]) == 0 {
		delete(a, uid)
	}
}
