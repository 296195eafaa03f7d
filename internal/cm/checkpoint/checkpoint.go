// Package checkpoint reads and writes the checksummed JSON state files the upstream kubelet keeps
// in its root directory (cpu_manager_state, memory_manager_state, the device manager's
// kubelet_internal_checkpoint), in its format, so a node can move between nodelet and upstream
// with its CPU, memory and device assignments intact.
package checkpoint

import (
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"os"
	"strings"

	"github.com/davecgh/go-spew/spew"

	"github.com/nodelet/nodelet/internal/lib/atomicfile"
)

// printer prints values the way upstream's checksum does: every type named, map keys sorted,
// no String methods, no pointer addresses.
var printer = spew.ConfigState{Indent: " ", SortKeys: true, DisableMethods: true, SpewKeys: true}

// Sum returns the checksum upstream stores in a state file for data: FNV-32a over data printed
// by go-spew with types (%#v). The printed type names are part of what is hashed, so names maps
// each of nodelet's type names (as reflect prints them, package.Type) to upstream's; a type
// left out keeps its own name.
func Sum(data any, names map[string]string) uint64 {
	printed := printer.Sprintf("%#v", data)
	for ours, theirs := range names {
		// Types are printed in parentheses: "(*pkg.T)" or "(pkg.T)" or within "map[..]pkg.T".
		printed = replaceTypeName(printed, ours, theirs)
	}
	h := fnv.New32a()
	h.Write([]byte(printed))
	return uint64(h.Sum32())
}

// replaceTypeName rewrites a type name where spew prints types: after "(", "*", "]" or "[",
// never inside printed values, which spew writes after ")".
func replaceTypeName(printed, ours, theirs string) string {
	var b strings.Builder
	for {
		i := strings.Index(printed, ours)
		if i < 0 {
			b.WriteString(printed)
			return b.String()
		}
		end := i + len(ours)
		inType := i > 0 && strings.ContainsRune("(*][", rune(printed[i-1])) &&
			end < len(printed) && strings.ContainsRune(")[]{", rune(printed[end]))
		b.WriteString(printed[:i])
		if inType {
			b.WriteString(theirs)
		} else {
			b.WriteString(ours)
		}
		printed = printed[end:]
	}
}

// CorruptError says a state file's checksum does not match its content.
type CorruptError struct {
	Path      string
	Want, Got uint64
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("checkpoint %s is corrupt: checksum %d, content sums to %d; move it away to start from an empty state", e.Path, e.Want, e.Got)
}

// Verify returns a CorruptError when want is not got.
func Verify(path string, want, got uint64) error {
	if want != got {
		return &CorruptError{Path: path, Want: want, Got: got}
	}
	return nil
}

// Write stores v as JSON at path, atomically (a crash leaves the old file or the new one) and
// readable by its owner only, as upstream's checkpoints.
func Write(path string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encoding checkpoint %s: %w", path, err)
	}
	return atomicfile.WriteFile(path, data, 0o600)
}

// Read decodes the JSON at path into v; found is false when there is no file.
func Read(path string, v any) (found bool, err error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("reading checkpoint: %w", err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		return true, fmt.Errorf("checkpoint %s is not valid JSON (%v); move it away to start from an empty state", path, err)
	}
	return true, nil
}
