package userns

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// IDsPerPod is the size of each pod's range, as upstream's default (idsPerPod 65536).
const IDsPerPod = 1 << 16

// kubeletUser is whose /etc/subuid and /etc/subgid entries give the node's range, as upstream.
const kubeletUser = "kubelet"

// Range is a run of host IDs: [First, First+Length).
type Range struct {
	First  uint32
	Length uint32
}

// DefaultRange is upstream's range when nothing is configured: every ID but the first 65536.
var DefaultRange = Range{First: IDsPerPod, Length: 1<<32 - IDsPerPod}

// NodeRange returns the node's range: the kubelet user's entry in subuidFile and subgidFile
// (e.g. /etc/subuid, /etc/subgid), which must be identical, or DefaultRange when neither file
// names the kubelet user.
func NodeRange(subuidFile, subgidFile string) (Range, error) {
	uids, uerr := subIDEntry(subuidFile)
	gids, gerr := subIDEntry(subgidFile)
	if uerr != nil {
		return Range{}, uerr
	}
	if gerr != nil {
		return Range{}, gerr
	}
	switch {
	case uids == nil && gids == nil:
		return DefaultRange, nil
	case uids == nil || gids == nil || *uids != *gids:
		return Range{}, fmt.Errorf("user namespaces: the %q entries of %s and %s differ; give the user the same single range in both", kubeletUser, subuidFile, subgidFile)
	}
	return *uids, nil
}

// subIDEntry returns the kubelet user's single entry of a subordinate-ID file ("name:first:count"
// lines), nil when the file or the entry is missing.
func subIDEntry(path string) (*Range, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("user namespaces: %w", err)
	}
	defer f.Close()
	var found *Range
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Split(strings.TrimSpace(sc.Text()), ":")
		if len(fields) != 3 || fields[0] != kubeletUser {
			continue
		}
		if found != nil {
			return nil, fmt.Errorf("user namespaces: %s has more than one %q entry; keep one", path, kubeletUser)
		}
		first, err1 := strconv.ParseUint(fields[1], 10, 32)
		length, err2 := strconv.ParseUint(fields[2], 10, 32)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("user namespaces: %s: bad %q entry %q; want %s:FIRST:COUNT", path, kubeletUser, sc.Text(), kubeletUser)
		}
		found = &Range{First: uint32(first), Length: uint32(length)}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("user namespaces: read %s: %w", path, err)
	}
	return found, nil
}

// validate applies upstream's rules: the range is made of whole pod ranges, does not include
// the host's own first 65536 IDs (root among them), and holds maxPods pods.
func (r Range) validate(maxPods int) error {
	switch {
	case r.First%IDsPerPod != 0:
		return fmt.Errorf("user namespaces: the node's first ID %d is not a multiple of %d", r.First, IDsPerPod)
	case r.First < IDsPerPod:
		return fmt.Errorf("user namespaces: the node's first ID %d must be at least %d", r.First, IDsPerPod)
	case r.Length%IDsPerPod != 0:
		return fmt.Errorf("user namespaces: the node's ID count %d is not a multiple of %d", r.Length, IDsPerPod)
	case uint64(r.First)+uint64(r.Length) > 1<<32:
		return fmt.Errorf("user namespaces: the node's range %d+%d goes past the last ID", r.First, r.Length)
	case int(r.Length/IDsPerPod) < maxPods:
		return fmt.Errorf("user namespaces: the node's %d IDs are not enough for %d pods of %d IDs", r.Length, maxPods, IDsPerPod)
	}
	return nil
}
