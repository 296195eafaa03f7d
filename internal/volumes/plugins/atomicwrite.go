package plugins

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// volumeFile is one file of a projected volume (configMap, secret, downwardAPI, projected).
type volumeFile struct {
	data []byte
	mode os.FileMode
}

const dataLink = "..data"

// writeAtomic makes dir hold exactly files, the way running containers can watch: files live
// in a timestamped directory, "..data" points at it, and each top-level name is a symlink
// through "..data". An update writes a new timestamped directory and swaps "..data" with one
// rename, so readers see either the old or the new set, never a mix. gid, when >= 0, owns
// the files, which then are group-readable as kubelet makes them. It reports whether anything
// changed.
func writeAtomic(dir string, files map[string]volumeFile, gid int64) (bool, error) {
	for p := range files {
		if err := checkVolumePath(p); err != nil {
			return false, err
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return false, err
	}
	oldTarget, _ := os.Readlink(filepath.Join(dir, dataLink))
	if gid >= 0 {
		withGroup := make(map[string]volumeFile, len(files))
		for p, f := range files {
			withGroup[p] = volumeFile{data: f.data, mode: f.mode | 0o440}
		}
		files = withGroup
	}
	if oldTarget != "" && sameFiles(filepath.Join(dir, oldTarget), files) {
		return false, nil
	}
	tsDir, err := os.MkdirTemp(dir, ".."+time.Now().UTC().Format("2006_01_02_15_04_05."))
	if err != nil {
		return false, err
	}
	if err := writeFiles(tsDir, files, gid); err != nil {
		os.RemoveAll(tsDir)
		return false, err
	}
	tmpLink := filepath.Join(dir, dataLink+"_tmp")
	os.Remove(tmpLink)
	if err := os.Symlink(filepath.Base(tsDir), tmpLink); err != nil {
		return false, err
	}
	if err := os.Rename(tmpLink, filepath.Join(dir, dataLink)); err != nil {
		return false, err
	}
	if err := linkTopLevel(dir, files); err != nil {
		return true, err
	}
	if oldTarget != "" && oldTarget != filepath.Base(tsDir) {
		if err := os.RemoveAll(filepath.Join(dir, oldTarget)); err != nil {
			return true, err
		}
	}
	return true, nil
}

// checkVolumePath refuses paths that would leave the volume or collide with its bookkeeping.
func checkVolumePath(p string) error {
	if p == "" || filepath.IsAbs(p) || strings.HasPrefix(p, "..") {
		return fmt.Errorf("invalid volume file path %q", p)
	}
	for _, part := range strings.Split(p, "/") {
		if part == ".." {
			return fmt.Errorf("invalid volume file path %q: must not contain '..'", p)
		}
	}
	return nil
}

func writeFiles(root string, files map[string]volumeFile, gid int64) error {
	if err := os.Chmod(root, 0o755); err != nil {
		return err
	}
	for p, f := range files {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(full, f.data, 0o600); err != nil {
			return err
		}
		if gid >= 0 {
			if err := os.Lchown(full, -1, int(gid)); err != nil {
				return err
			}
		}
		if err := os.Chmod(full, f.mode); err != nil { // WriteFile's mode is subject to umask
			return err
		}
	}
	return nil
}

// sameFiles reports whether root already holds exactly files with the same contents and modes.
func sameFiles(root string, files map[string]volumeFile) bool {
	seen := 0
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		want, ok := files[rel]
		info, ierr := d.Info()
		if !ok || ierr != nil || info.Mode().Perm() != want.mode.Perm() {
			return fs.ErrInvalid
		}
		got, rerr := os.ReadFile(p)
		if rerr != nil || !bytes.Equal(got, want.data) {
			return fs.ErrInvalid
		}
		seen++
		return nil
	})
	return err == nil && seen == len(files)
}

// linkTopLevel points each top-level name of files through "..data" and removes links that
// the new set no longer has.
func linkTopLevel(dir string, files map[string]volumeFile) error {
	want := map[string]bool{}
	for p := range files {
		top, _, _ := strings.Cut(p, "/")
		want[top] = true
	}
	for top := range want {
		link := filepath.Join(dir, top)
		target := filepath.Join(dataLink, top)
		if cur, err := os.Readlink(link); err == nil && cur == target {
			continue
		}
		os.Remove(link)
		if err := os.Symlink(target, link); err != nil {
			return err
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "..") || want[e.Name()] || e.Type()&fs.ModeSymlink == 0 {
			continue
		}
		if err := os.Remove(filepath.Join(dir, e.Name())); err != nil {
			return err
		}
	}
	return nil
}
