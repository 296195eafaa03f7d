package logs

import (
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/internal/runtime/container"
)

// Rotation defaults, as the KubeletConfiguration's.
const (
	DefaultMaxSize  = 10 * 1024 * 1024 // containerLogMaxSize 10Mi
	DefaultMaxFiles = 5                // containerLogMaxFiles
	DefaultInterval = 10 * time.Second // containerLogMonitorInterval

	rotatedTimeFormat = "20060102-150405"
	gzSuffix          = ".gz"
	tmpSuffix         = ".tmp"
)

// RotatorRuntime is what rotation needs from the runtime (runtime.LogService).
type RotatorRuntime interface {
	RunningContainerLogs(ctx context.Context) ([]*container.ContainerLog, error)
	ReopenContainerLog(ctx context.Context, containerID string) error
}

// RotatorOptions configure container log rotation; zero values take the defaults.
type RotatorOptions struct {
	// MaxSize is the size at which a live log file is rotated (containerLogMaxSize).
	MaxSize int64
	// MaxFiles is how many files a container keeps, the live one included
	// (containerLogMaxFiles); at least 2.
	MaxFiles int
	// Interval is how often log sizes are checked (containerLogMonitorInterval).
	Interval time.Duration
	Runtime  RotatorRuntime
}

// ParseMaxSize parses containerLogMaxSize ("10Mi"); "" gives the default.
func ParseMaxSize(s string) (int64, error) {
	if s == "" {
		return DefaultMaxSize, nil
	}
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return 0, fmt.Errorf("containerLogMaxSize %q: %w", s, err)
	}
	return q.Value(), nil
}

// Rotator renames container log files that grew past MaxSize, has the runtime reopen them,
// gzips older rotated files and deletes the oldest beyond MaxFiles.
type Rotator struct {
	maxSize  int64
	maxFiles int
	interval time.Duration
	runtime  RotatorRuntime
	now      func() time.Time
}

// NewRotator checks the options and fills in defaults.
func NewRotator(opts RotatorOptions) (*Rotator, error) {
	if opts.Runtime == nil {
		return nil, errors.New("log rotation needs a runtime")
	}
	if opts.MaxSize <= 0 {
		opts.MaxSize = DefaultMaxSize
	}
	if opts.MaxFiles == 0 {
		opts.MaxFiles = DefaultMaxFiles
	}
	if opts.MaxFiles < 2 {
		return nil, fmt.Errorf("containerLogMaxFiles must be at least 2, got %d", opts.MaxFiles)
	}
	if opts.Interval <= 0 {
		opts.Interval = DefaultInterval
	}
	return &Rotator{
		maxSize: opts.MaxSize, maxFiles: opts.MaxFiles, interval: opts.Interval,
		runtime: opts.Runtime, now: time.Now,
	}, nil
}

// Run checks every interval until ctx ends.
func (r *Rotator) Run(ctx context.Context) error {
	klog.InfoS("Starting container log rotation", "maxSize", r.maxSize, "maxFiles", r.maxFiles, "interval", r.interval)
	ticker := time.NewTicker(r.interval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
			r.rotateAll(ctx)
		}
	}
}

// rotateAll rotates every running container's log that needs it.
func (r *Rotator) rotateAll(ctx context.Context) {
	containers, err := r.runtime.RunningContainerLogs(ctx)
	if err != nil {
		klog.ErrorS(err, "Cannot list containers for log rotation")
		return
	}
	for _, c := range containers {
		if c.Path == "" {
			continue
		}
		if err := r.rotateContainer(ctx, c.ContainerID, c.Path); err != nil {
			klog.ErrorS(err, "Failed to rotate container log", "containerID", c.ContainerID, "path", c.Path)
		}
	}
}

func (r *Rotator) rotateContainer(ctx context.Context, id, path string) error {
	info, err := os.Stat(path)
	if os.IsNotExist(err) {
		// The live file went missing (e.g. nodelet stopped between rename and reopen):
		// have the runtime create it again.
		klog.InfoS("Container log file missing, reopening it", "containerID", id, "path", path)
		return r.runtime.ReopenContainerLog(ctx, id)
	}
	if err != nil {
		return err
	}
	if info.Size() < r.maxSize {
		return nil
	}
	rotated, err := rotatedFiles(path)
	if err != nil {
		return err
	}
	rotated = r.removeExcess(rotated)
	for _, f := range rotated {
		if !strings.HasSuffix(f, gzSuffix) {
			if err := compress(f); err != nil {
				klog.ErrorS(err, "Failed to compress rotated container log", "path", f)
			}
		}
	}
	return r.rotateLive(ctx, id, path)
}

// rotateLive renames the live file and has the runtime start a new one; if the runtime
// cannot, the file is renamed back so the next round tries again.
func (r *Rotator) rotateLive(ctx context.Context, id, path string) error {
	target := path + "." + r.now().Format(rotatedTimeFormat)
	if _, err := os.Stat(target); err == nil {
		return fmt.Errorf("rotated log %s already exists; retrying next round", target)
	}
	if err := os.Rename(path, target); err != nil {
		return fmt.Errorf("rename %s: %w", path, err)
	}
	if err := r.runtime.ReopenContainerLog(ctx, id); err != nil {
		if renameErr := os.Rename(target, path); renameErr != nil {
			klog.ErrorS(renameErr, "Failed to rename rotated log back; its lines stay in the rotated file", "path", target)
		}
		return fmt.Errorf("reopen container log: %w", err)
	}
	klog.V(2).InfoS("Rotated container log", "containerID", id, "path", path, "rotated", target)
	return nil
}

// rotatedFiles lists path's rotated files (path.<time>[.gz]), oldest first, after removing
// leftovers of interrupted compressions: *.tmp files, and originals whose .gz exists.
func rotatedFiles(path string) ([]string, error) {
	dir, prefix := filepath.Dir(path), filepath.Base(path)+"."
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	present := map[string]bool{}
	for _, e := range entries {
		present[e.Name()] = true
	}
	var out []string
	for _, e := range entries {
		name := e.Name()
		if !strings.HasPrefix(name, prefix) || e.IsDir() {
			continue
		}
		full := filepath.Join(dir, name)
		if strings.HasSuffix(name, tmpSuffix) || present[name+gzSuffix] {
			if err := os.Remove(full); err != nil {
				klog.ErrorS(err, "Failed to remove leftover log file", "path", full)
			}
			continue
		}
		out = append(out, full)
	}
	sort.Strings(out) // the timestamps sort by time
	return out, nil
}

// removeExcess deletes the oldest rotated files so that, with the file about to be rotated
// and the new live file, at most maxFiles remain. It returns the files kept.
func (r *Rotator) removeExcess(rotated []string) []string {
	keep := r.maxFiles - 2
	for len(rotated) > keep {
		if err := os.Remove(rotated[0]); err != nil && !os.IsNotExist(err) {
			klog.ErrorS(err, "Failed to remove old container log", "path", rotated[0])
		}
		rotated = rotated[1:]
	}
	return rotated
}

// compress gzips path into path.gz (through a .tmp file) and removes path.
func compress(path string) error {
	in, err := os.Open(path)
	if err != nil {
		return err
	}
	defer in.Close()
	tmp := path + gzSuffix + tmpSuffix
	out, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o640)
	if err != nil {
		return err
	}
	zw := gzip.NewWriter(out)
	_, err = io.Copy(zw, in)
	if closeErr := zw.Close(); err == nil {
		err = closeErr
	}
	if closeErr := out.Close(); err == nil {
		err = closeErr
	}
	if err == nil {
		err = os.Rename(tmp, path+gzSuffix)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("compress %s: %w", path, err)
	}
	return os.Remove(path)
}
