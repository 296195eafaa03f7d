package volumes

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// subPathIn is subPath (relative, without '..': the runtime checked it) inside the volume at
// mnt. A missing one is made world-writable, as the volume's users may be anyone; a volume
// containers only read cannot get one.
func subPathIn(mnt Mount, volume, subPath string) (string, error) {
	full := filepath.Join(mnt.Path, filepath.Clean(subPath))
	if rel, err := filepath.Rel(mnt.Path, full); err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return "", fmt.Errorf("volume mount %q: subPath %q leaves the volume", volume, subPath)
	}
	if _, err := os.Stat(full); !os.IsNotExist(err) {
		return full, nil
	}
	if mnt.ReadOnly {
		return "", fmt.Errorf("volume mount %q: subPath %q does not exist in the volume", volume, subPath)
	}
	if err := os.MkdirAll(full, 0o777); err != nil {
		return "", fmt.Errorf("volume mount %q subPath: %w", volume, err)
	}
	// MkdirAll's mode is subject to umask.
	if err := os.Chmod(full, 0o777); err != nil {
		return "", fmt.Errorf("volume mount %q subPath: %w", volume, err)
	}
	return full, nil
}
