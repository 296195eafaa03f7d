package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"golang.org/x/sys/unix"
)

// A block volume is an image file <data-dir>/<id>.img behind a loop device: staging attaches
// the loop device (its path kept in <staging>/device), publishing bind-mounts the device node
// on the target file, unstaging detaches it.

func imagePath(dataDir, id string) string { return filepath.Join(dataDir, id+".img") }

func isBlock(c *csipb.VolumeCapability) bool { return c.GetBlock() != nil }

// createBlockVolume makes the volume's image file of size bytes.
func createBlockVolume(dataDir, id string, size int64) error {
	f, err := os.OpenFile(imagePath(dataDir, id), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Truncate(size)
}

// attachLoop returns the loop device backing the volume's image, attaching one if needed.
func attachLoop(dataDir, id string) (string, error) {
	img := imagePath(dataDir, id)
	if out, err := exec.Command("losetup", "-j", img).Output(); err == nil {
		if dev, _, ok := strings.Cut(string(out), ":"); ok && dev != "" {
			return dev, nil
		}
	}
	out, err := exec.Command("losetup", "-f", "--show", img).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("losetup %s: %v: %s", img, err, out)
	}
	return strings.TrimSpace(string(out)), nil
}

func detachLoop(dataDir, id string) error {
	out, err := exec.Command("losetup", "-j", imagePath(dataDir, id)).Output()
	if err != nil {
		return err
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if dev, _, ok := strings.Cut(line, ":"); ok && dev != "" {
			if out, err := exec.Command("losetup", "-d", dev).CombinedOutput(); err != nil {
				return fmt.Errorf("losetup -d %s: %v: %s", dev, err, out)
			}
		}
	}
	return nil
}

// stageBlock attaches the loop device and records it in the staging directory.
func stageBlock(dataDir, id, staging string) error {
	dev, err := attachLoop(dataDir, id)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(staging, 0o750); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(staging, "device"), []byte(dev), 0o640)
}

// unstageBlock detaches the volume's loop device if it was staged as a block volume.
func unstageBlock(dataDir, id, staging string) error {
	if _, err := os.Stat(filepath.Join(staging, "device")); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err := detachLoop(dataDir, id); err != nil {
		return err
	}
	return os.Remove(filepath.Join(staging, "device"))
}

// publishBlock bind-mounts the volume's device node on the target file.
func publishBlock(dataDir, id, staging, target string, readOnly bool) error {
	var dev string
	if staging != "" {
		raw, err := os.ReadFile(filepath.Join(staging, "device"))
		if err != nil {
			return fmt.Errorf("the volume is not staged as a block volume: %w", err)
		}
		dev = string(raw)
	} else {
		var err error
		if dev, err = attachLoop(dataDir, id); err != nil {
			return err
		}
	}
	if mounted(target) {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(target), 0o750); err != nil {
		return err
	}
	f, err := os.OpenFile(target, os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	f.Close()
	flags := uintptr(unix.MS_BIND)
	if err := unix.Mount(dev, target, "", flags, ""); err != nil {
		return fmt.Errorf("bind-mount %s on %s: %w", dev, target, err)
	}
	if readOnly {
		return unix.Mount("", target, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY, "")
	}
	return nil
}
