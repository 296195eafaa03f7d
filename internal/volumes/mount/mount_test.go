package mount

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// Under finds the mounts at or below a pod's directory, unescaped, nested ones before their
// parent, and nothing of a pod whose UID merely starts the same.
func TestUnder(t *testing.T) {
	mountinfo := `22 1 8:1 / / rw,relatime - ext4 /dev/sda1 rw
80 22 0:50 / /var/lib/kubelet/pods/u1/volumes/kubernetes.io~empty-dir/mem rw - tmpfs tmpfs rw,size=65536k
81 22 0:51 / /var/lib/kubelet/pods/u1/volumes/kubernetes.io~empty-dir/with\040space rw - tmpfs tmpfs rw
82 80 0:52 / /var/lib/kubelet/pods/u1/volumes/kubernetes.io~empty-dir/mem/inner rw - tmpfs tmpfs rw
83 22 0:53 / /var/lib/kubelet/pods/u10/volumes/kubernetes.io~empty-dir/other rw - tmpfs tmpfs rw
`
	path := filepath.Join(t.TempDir(), "mountinfo")
	if err := os.WriteFile(path, []byte(mountinfo), 0o644); err != nil {
		t.Fatal(err)
	}
	points, err := ReadPoints(path)
	if err != nil {
		t.Fatal(err)
	}
	got := Under(points, "/var/lib/kubelet/pods/u1")
	base := "/var/lib/kubelet/pods/u1/volumes/kubernetes.io~empty-dir/"
	if len(got) != 3 {
		t.Fatalf("mount points = %q, want mem, mem/inner and 'with space' under u1", got)
	}
	for _, p := range []string{base + "mem", base + "mem/inner", base + "with space"} {
		if !slices.Contains(got, p) {
			t.Errorf("mount points %q lack %q", got, p)
		}
	}
	if slices.Index(got, base+"mem/inner") > slices.Index(got, base+"mem") {
		t.Errorf("mount points %q: a nested mount must come before its parent", got)
	}
	if at := Under(points, base+"mem"); len(at) != 2 || at[1] != base+"mem" {
		t.Errorf("mounts at or below mem = %q, want mem/inner then mem", at)
	}
}

// A mount at dir counts, one beside it whose name starts the same does not, and a trailing
// slash changes nothing.
func TestUnderIsExact(t *testing.T) {
	points := []string{"/", "/var/lib/kubelet/pods/a/volumes/x", "/var/lib/kubelet/pods/ab", "/var/lib/kubelet/pods/a"}
	got := Under(points, "/var/lib/kubelet/pods/a/")
	if len(got) != 2 || got[0] != "/var/lib/kubelet/pods/a/volumes/x" || got[1] != "/var/lib/kubelet/pods/a" {
		t.Errorf("Under = %v", got)
	}
	if s := unescapeOctal(`/mnt/with\040space`); s != "/mnt/with space" {
		t.Errorf("unescapeOctal = %q", s)
	}
}
