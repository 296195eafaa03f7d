package runtimefeatures

import (
	"fmt"
	"strconv"
	"strings"
)

// Since is the first containerd release that has a feature. For a feature CRI Status does not
// report, the runtime's version (CRI Version) is all there is to tell by; for the others it
// only names, in a refusal, the release that would lift it.
type Since struct {
	Containerd string // "2.1"
	CRIO       string // CRI-O's first release with it, "" when not known
	// With is what else the node needs ("runc 1.1 or later on Linux 5.12 or later").
	With string
}

// StopSignals is a container's own stop signal (CRI ContainerConfig.stop_signal, the
// ContainerStopSignals feature): older runtimes drop the field and stop the container with
// the image's STOPSIGNAL.
var StopSignals = Since{Containerd: "2.1"}

// ImageVolumes is an image mounted through a CRI Mount's image field (and its image_sub_path).
// CRI has no feature for it: containerd 1.6 and 2.0 accept such a mount and ignore the field,
// so the container would silently get an empty directory; the runtime's version decides.
var ImageVolumesSince = Since{Containerd: "2.1", CRIO: "1.31"}

// The features CRI Status reports, and the releases that first report them, for the texts of
// refusals.
var (
	SupplementalGroupsPolicySince = Since{Containerd: "2.0"}
	UserNamespacesSince           = Since{Containerd: "2.0", With: "runc 1.2 or later on Linux 6.3 or later"}
	RecursiveReadOnlySince        = Since{Containerd: "2.0", With: "runc 1.1 or later on Linux 5.12 or later"}
)

// ObserveVersion records the runtime's name and version as CRI Version reports them.
func (s *Store) ObserveVersion(name, version string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.name, s.version = name, version
}

// Runtime is the runtime's name and version ("containerd 1.6.20~ds1"), "" before CRI Version
// answered.
func (s *Store) Runtime() string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return strings.TrimSpace(s.name + " " + strings.TrimPrefix(s.version, "v"))
}

// Has says whether the runtime is containerd (or CRI-O, where since names its release) at least
// at the release since names; another runtime, or a version that does not parse, does not have
// it (nodelet knows these runtimes' releases only).
func (s *Store) Has(since Since) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	first := map[string]string{"containerd": since.Containerd, "cri-o": since.CRIO}[strings.ToLower(s.name)]
	if first == "" {
		return false
	}
	have, ok := majorMinor(s.version)
	want, _ := majorMinor(first)
	return ok && (have[0] > want[0] || have[0] == want[0] && have[1] >= want[1])
}

// Lacking says why the runtime does not have a feature and which release does, for a refusal:
// "this node runs containerd 1.6.20~ds1; containerd 2.1 or later has it".
func (s *Store) Lacking(since Since) string {
	release := "containerd " + since.Containerd + " or later"
	if since.CRIO != "" {
		release += " (or CRI-O " + since.CRIO + " or later)"
	}
	if since.With != "" {
		release += " with " + since.With
	}
	runtime := s.Runtime()
	if runtime == "" {
		return "the container runtime has not said which it is; " + release + " has it"
	}
	return fmt.Sprintf("this node runs %s; %s has it", runtime, release)
}

// ImageVolumes says whether the runtime mounts image volumes.
func (s *Store) ImageVolumes() bool { return s.Has(ImageVolumesSince) }

// ImageVolumesRefusal is why a pod's image volume cannot run here, naming the runtime.
func (s *Store) ImageVolumesRefusal() string {
	return "image volumes need a runtime that mounts images through CRI: " + s.Lacking(ImageVolumesSince)
}

// majorMinor reads "v2.4.2", "1.6.20~ds1" or "2.1" as its major and minor numbers.
func majorMinor(version string) ([2]int, bool) {
	parts := strings.SplitN(strings.TrimPrefix(version, "v"), ".", 3)
	if len(parts) < 2 {
		return [2]int{}, false
	}
	major, err1 := strconv.Atoi(parts[0])
	minor, err2 := strconv.Atoi(leadingDigits(parts[1]))
	return [2]int{major, minor}, err1 == nil && err2 == nil
}

func leadingDigits(s string) string {
	end := 0
	for end < len(s) && s[end] >= '0' && s[end] <= '9' {
		end++
	}
	return s[:end]
}
