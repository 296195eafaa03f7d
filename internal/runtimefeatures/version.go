package runtimefeatures

import (
	"fmt"
	"strconv"
	"strings"
)

// Version is the runtime's name and version as CRI Version reports them ("containerd",
// "v2.4.2"; Debian's containerd 1.6 says "1.6.20~ds1").
type Version struct {
	Name, Version string
}

func (v Version) String() string {
	if v.Name == "" {
		return "a runtime that has not reported its version"
	}
	return v.Name + " " + v.Version
}

// imageVolumeRuntimes are the first releases of each runtime that mount an image given in a
// CRI Mount's image field (and its image_sub_path): containerd 2.1 and CRI-O 1.31.
var imageVolumeRuntimes = map[string][2]int{"containerd": {2, 1}, "cri-o": {1, 31}}

// ImageVolumesNeed names the runtimes that can mount image volumes, for refusals.
const ImageVolumesNeed = "containerd 2.1 or later, or CRI-O 1.31 or later"

// ObserveVersion records what CRI Version reported.
func (s *Store) ObserveVersion(v Version) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.version = v
}

// RuntimeVersion is what CRI Version last reported.
func (s *Store) RuntimeVersion() Version {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.version
}

// ImageVolumes says whether the runtime mounts image volumes. CRI has no feature for it:
// containerd 1.6 and 2.0 accept a Mount with image set and ignore the field, so the container
// would silently get an empty directory. So the runtime's version decides, and an unknown
// runtime is taken not to.
func (s *Store) ImageVolumes() bool {
	v := s.RuntimeVersion()
	first, known := imageVolumeRuntimes[strings.ToLower(v.Name)]
	if !known {
		return false
	}
	major, minor, ok := majorMinor(v.Version)
	return ok && (major > first[0] || major == first[0] && minor >= first[1])
}

// ImageVolumesRefusal is why a pod's image volume cannot run here, naming the runtime.
func (s *Store) ImageVolumesRefusal() string {
	return fmt.Sprintf("image volumes need a runtime that mounts images through CRI (%s); this node runs %s",
		ImageVolumesNeed, s.RuntimeVersion())
}

// majorMinor reads "v2.4.2", "2.1.0-rc.1" or "1.6.20~ds1".
func majorMinor(version string) (major, minor int, ok bool) {
	parts := strings.SplitN(strings.TrimPrefix(version, "v"), ".", 3)
	if len(parts) < 2 {
		return 0, 0, false
	}
	major, err1 := strconv.Atoi(parts[0])
	minor, err2 := strconv.Atoi(strings.TrimRightFunc(parts[1], func(r rune) bool { return r < '0' || r > '9' }))
	return major, minor, err1 == nil && err2 == nil
}
