// Package atomicfile writes state files so that a crash or a full disk leaves either the old
// content or the new one, never a torn file: the data goes to a temporary file in the same
// directory, is fsynced, renamed over the target, and the directory is fsynced.
package atomicfile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// tempMarker sits between the target's name and CreateTemp's random digits in a temporary
// file's name: ".<target>.tmp-<digits>".
const tempMarker = ".tmp-"

// WriteFile replaces path with data, atomically and durably. perm is applied exactly (not
// through the umask).
func WriteFile(path string, data []byte, perm os.FileMode) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+tempMarker+"*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmpName := tmp.Name()
	committed := false
	defer func() {
		if !committed {
			os.Remove(tmpName)
		}
	}()
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Chmod(perm)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmpName, path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	committed = true
	return syncDir(dir)
}

// syncDir makes a rename in dir survive a crash.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}

// IsTemp reports whether name is one of WriteFile's temporary files.
func IsTemp(name string) bool {
	i := strings.LastIndex(name, tempMarker)
	digits := name[i+len(tempMarker):]
	return i > 1 && name[0] == '.' && digits != "" && strings.Trim(digits, "0123456789") == ""
}

// SweepTemps removes the temporary files a crash in WriteFile left in dir (not below it):
// regular files named as WriteFile names them, never a link or anything else. It returns
// the names it removed; a missing dir is no error.
func SweepTemps(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("sweep %s: %w", dir, err)
	}
	var removed []string
	var errs []error
	for _, e := range entries {
		if !e.Type().IsRegular() || !IsTemp(e.Name()) {
			continue
		}
		if err := os.Remove(filepath.Join(dir, e.Name())); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, e.Name())
	}
	return removed, errors.Join(errs...)
}
