package mount

import (
	"bufio"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// mountEntry is one mountinfo line: the mount point, its filesystem type and super options.
type mountEntry struct {
	point, fsType string
	superOptions  []string
}

func readEntries(mountinfo string) ([]mountEntry, error) {
	f, err := os.Open(mountinfo)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []mountEntry
	for sc := bufio.NewScanner(f); sc.Scan(); {
		fields := strings.Fields(sc.Text())
		sep := slices.Index(fields, "-")
		if len(fields) < 5 || sep < 0 || sep+3 >= len(fields) {
			continue
		}
		out = append(out, mountEntry{point: unescapeOctal(fields[4]), fsType: fields[sep+1],
			superOptions: strings.Split(fields[sep+3], ",")})
	}
	return out, nil
}

// SELinuxSupported tells whether the filesystem path is on carries SELinux labels (the
// seclabel super option), which upstream checks before it asks the runtime to relabel a CSI
// volume.
func SELinuxSupported(mountinfo, path string) bool {
	entries, err := readEntries(mountinfo)
	if err != nil {
		return false
	}
	path = filepath.Clean(path)
	var best *mountEntry
	for i := range entries {
		p := entries[i].point
		if (path == p || p == "/" || strings.HasPrefix(path, p+"/")) && (best == nil || len(p) >= len(best.point)) {
			best = &entries[i]
		}
	}
	return best != nil && slices.Contains(best.superOptions, "seclabel")
}

// SELinuxEnabled tells whether SELinux is on for this process, as the runtime libraries
// upstream uses judge it: selinuxfs is mounted and the process has a label other than the
// kernel's. mountinfo and attrCurrent are /proc/self/mountinfo and /proc/self/attr/current.
func SELinuxEnabled(mountinfo, attrCurrent string) bool {
	entries, err := readEntries(mountinfo)
	if err != nil || !slices.ContainsFunc(entries, func(e mountEntry) bool { return e.fsType == "selinuxfs" }) {
		return false
	}
	label, err := os.ReadFile(attrCurrent)
	if err != nil {
		return false
	}
	return strings.TrimRight(string(label), "\x00\n") != "kernel"
}
