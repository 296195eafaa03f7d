package runtimefeatures

import "testing"

// A feature CRI does not report is told by containerd's version, as CRI Version spells it
// (containerd's own builds say "v2.4.2", Debian's "1.6.20~ds1"); the refusal names the
// runtime the node runs and the release that has the feature.
func TestVersionedFeatures(t *testing.T) {
	for _, tc := range []struct {
		name, version string
		has           bool
	}{
		{"containerd", "v2.4.2", true}, {"containerd", "2.1.0", true}, {"containerd", "v3.0.0", true},
		{"containerd", "v2.0.5", false}, {"containerd", "1.6.20~ds1", false}, {"containerd", "1.7", false},
		{"containerd", "garbage", false}, {"cri-o", "1.33.0", false}, {"", "", false},
	} {
		s := &Store{}
		s.ObserveVersion(tc.name, tc.version)
		if got := s.Has(StopSignals); got != tc.has {
			t.Errorf("%s %s: stop signals %v, want %v", tc.name, tc.version, got, tc.has)
		}
	}
	s := &Store{}
	if got, want := s.Lacking(StopSignals), "the container runtime has not said which it is; containerd 2.1 or later has it"; got != want {
		t.Errorf("before CRI Version: %q, want %q", got, want)
	}
	s.ObserveVersion("containerd", "1.6.20~ds1")
	if got, want := s.Lacking(RecursiveReadOnlySince),
		"this node runs containerd 1.6.20~ds1; containerd 2.0 or later with runc 1.1 or later on Linux 5.12 or later has it"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
	s.ObserveVersion("containerd", "v2.0.5")
	if got, want := s.Lacking(StopSignals), "this node runs containerd 2.0.5; containerd 2.1 or later has it"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
}
