package cpumanager

import (
	"fmt"
	"path/filepath"

	"k8s.io/utils/cpuset"

	"github.com/nodelet/nodelet/internal/cm/checkpoint"
)

// StateFile is the name of the CPU manager's state file in the root directory, as upstream.
const StateFile = "cpu_manager_state"

// assignments are the exclusive CPUs by pod UID and container name.
type assignments map[string]map[string]cpuset.CPUSet

func (a assignments) get(pod, container string) (cpuset.CPUSet, bool) {
	s, ok := a[pod][container]
	return s, ok
}

func (a assignments) set(pod, container string, s cpuset.CPUSet) {
	if a[pod] == nil {
		a[pod] = map[string]cpuset.CPUSet{}
	}
	a[pod][container] = s
}

func (a assignments) remove(pod, container string) {
	delete(a[pod], container)
	if len(a[pod]) == 0 {
		delete(a, pod)
	}
}

// all returns every assigned CPU.
func (a assignments) all() cpuset.CPUSet {
	out := cpuset.New()
	for _, containers := range a {
		for _, s := range containers {
			out = out.Union(s)
		}
	}
	return out
}

// state is what the CPU manager keeps across restarts: the shared pool (upstream's default
// CPU set) and the exclusive assignments.
type state struct {
	defaultSet cpuset.CPUSet
	assigned   assignments
}

// stateFile is the JSON of cpu_manager_state, field for field upstream's checkpoint (v2).
type stateFile struct {
	PolicyName    string                       `json:"policyName"`
	DefaultCPUSet string                       `json:"defaultCpuSet"`
	Entries       map[string]map[string]string `json:"entries,omitempty"`
	Checksum      checksumValue                `json:"checksum"`
}

// checksumValue is its own type because upstream's checksum field has one, and the type's
// name is part of what the checksum covers.
type checksumValue uint64

// upstreamNames maps these types to the names upstream's checksum prints.
var upstreamNames = map[string]string{
	"cpumanager.stateFile":     "state.CPUManagerCheckpoint",
	"cpumanager.checksumValue": "checksum.Checksum",
}

func (f *stateFile) sum() checksumValue {
	saved := f.Checksum
	f.Checksum = 0
	sum := checkpoint.Sum(f, upstreamNames)
	f.Checksum = saved
	return checksumValue(sum)
}

// store writes s for policy to the state file under dir.
func store(dir, policy string, s state) error {
	f := &stateFile{PolicyName: policy, DefaultCPUSet: s.defaultSet.String(), Entries: map[string]map[string]string{}}
	for pod, containers := range s.assigned {
		f.Entries[pod] = map[string]string{}
		for name, cpus := range containers {
			f.Entries[pod][name] = cpus.String()
		}
	}
	f.Checksum = f.sum()
	return checkpoint.Write(filepath.Join(dir, StateFile), f)
}

// restore reads the state file under dir for policy. A missing file gives an empty state,
// written at once (as upstream does). A file of another policy, or a corrupt one, is an error
// that keeps nodelet from starting: the assignments it holds may be in use by running
// containers.
func restore(dir, policy string) (state, error) {
	path := filepath.Join(dir, StateFile)
	s := state{defaultSet: cpuset.New(), assigned: assignments{}}
	// As upstream, entries start as an empty map, not nil: a file without them must print
	// (and so sum) as upstream's does.
	f := &stateFile{Entries: map[string]map[string]string{}}
	found, err := checkpoint.Read(path, f)
	if err == nil && !found {
		return s, store(dir, policy, s)
	}
	if err == nil {
		err = f.decode(path, policy, &s)
	}
	if err != nil {
		return s, fmt.Errorf("could not restore state from checkpoint: %w, please drain this node and delete the CPU manager checkpoint file %q before restarting Kubelet", err, path)
	}
	return s, nil
}

// decode checks the file's checksum and policy and fills s from it.
func (f *stateFile) decode(path, policy string, s *state) error {
	if f.Checksum != 0 { // upstream accepts a file without one (its old file backend)
		if err := checkpoint.Verify(path, uint64(f.Checksum), uint64(f.sum())); err != nil {
			return err
		}
	}
	if f.PolicyName != policy {
		return fmt.Errorf("configured policy %q differs from state checkpoint policy %q", policy, f.PolicyName)
	}
	var err error
	if s.defaultSet, err = cpuset.Parse(f.DefaultCPUSet); err != nil {
		return fmt.Errorf("could not parse default cpu set %q: %w", f.DefaultCPUSet, err)
	}
	for pod, containers := range f.Entries {
		for name, text := range containers {
			cpus, err := cpuset.Parse(text)
			if err != nil {
				return fmt.Errorf("could not parse cpuset %q for container %q in pod %q: %w", text, name, pod, err)
			}
			s.assigned.set(pod, name, cpus)
		}
	}
	return nil
}
