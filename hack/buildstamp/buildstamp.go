// Package buildstamp reads which commit a binary was built from and how busy the machine is,
// for the bench drivers: a published figure names the commit it measured and the load it saw.
package buildstamp

import (
	"debug/buildinfo"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Revision is the VCS revision Go stamped into the binary ("+dirty" if modified), or,
// when it was built with -buildvcs=false, the checkout's HEAD.
func Revision(path string) string {
	if _, err := buildinfo.ReadFile(path); err != nil {
		return "unknown"
	}
	if rev := Stamped(path); rev != "" {
		return rev
	}
	return gitHead() + " (HEAD of the checkout; the binary carries no VCS stamp)"
}

// Stamped is the revision Go stamped into a binary ("+dirty" if modified), "" without a stamp.
func Stamped(path string) string {
	info, err := buildinfo.ReadFile(path)
	if err != nil {
		return ""
	}
	rev, dirty := "", ""
	for _, s := range info.Settings {
		switch {
		case s.Key == "vcs.revision" && len(s.Value) >= 12:
			rev = s.Value[:12]
		case s.Key == "vcs.modified" && s.Value == "true":
			dirty = "+dirty"
		}
	}
	if rev == "" {
		return ""
	}
	return rev + dirty
}

// Check refuses a binary that does not say which commit it is, or one built from a
// modified tree, unless allowDirty: a published figure must name what it measured.
func Check(path string, allowDirty bool) error {
	rev := Revision(path)
	switch {
	case strings.Contains(rev, "no VCS stamp") || rev == "unknown":
		return fmt.Errorf("%s carries no VCS stamp: build it with `make build` (go build -buildvcs=true) in a git checkout", path)
	case strings.HasSuffix(rev, "+dirty") && !allowDirty:
		return fmt.Errorf("%s was built from a modified tree (%s): commit first, or pass -allow-dirty for a development run", path, rev)
	}
	return nil
}

// gitHead reads .git/HEAD and the ref it names, without running git.
func gitHead() string {
	head := readTrim(".git/HEAD")
	ref, isRef := strings.CutPrefix(head, "ref: ")
	if !isRef {
		return short(head)
	}
	if id := readTrim(filepath.Join(".git", ref)); id != "" {
		return short(id)
	}
	for _, line := range strings.Split(readTrim(".git/packed-refs"), "\n") {
		if id, name, ok := strings.Cut(line, " "); ok && name == ref {
			return short(id)
		}
	}
	return "unknown"
}

func short(id string) string {
	if len(id) < 12 {
		return "unknown"
	}
	return id[:12]
}

// LoadAvg is the 1, 5 and 15 minute load average: other work on the machine skews the figures.
func LoadAvg() string {
	f := strings.Fields(readTrim("/proc/loadavg"))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

func readTrim(path string) string {
	b, _ := os.ReadFile(path)
	return strings.TrimSpace(string(b))
}

// Runc is the version of the runc the project containerd serving socket runs ("runc 1.3.7"):
// the one beside its binary (containerd 2 from _output/runtime2/bin), else the first on PATH
// (Debian's, for the 1.6 instance). The pid file sits two levels above the socket, as
// hack/containerd.sh lays them out.
func Runc(socket string) string {
	runc := "runc"
	pid := readTrim(filepath.Join(filepath.Dir(filepath.Dir(socket)), "containerd.pid"))
	if exe, err := os.Readlink("/proc/" + pid + "/exe"); err == nil && pid != "" {
		if beside := filepath.Join(filepath.Dir(exe), "runc"); fileExists(beside) {
			runc = beside
		}
	}
	out, err := exec.Command(runc, "--version").Output()
	if err != nil {
		return "runc (version unknown)"
	}
	first, _, _ := strings.Cut(string(out), "\n")
	return "runc " + strings.TrimPrefix(strings.TrimSpace(first), "runc version ")
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
