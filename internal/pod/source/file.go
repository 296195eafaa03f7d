package source

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/internal/podspec/podutil"
)

// debounceDelay groups the burst of events one save produces into one re-read.
const debounceDelay = 100 * time.Millisecond

// FileWatcher reads static pod manifests from a directory (or one file) and
// sends a full snapshot of the good pods whenever they change. (The type
// cannot be called podutil.FileSource: that name is the source-name constant.)
type FileWatcher struct {
	path     string
	nodeName string
	period   time.Duration
	out      snapshots
	recorder record.EventRecorder

	pods     *staticPods
	reports  *reportOnce
	lastGood map[string]*v1.Pod // file path -> last pod decoded from it
	// readErr is the last error reading path itself, logged once.
	readErr string
}

// NewFileSource returns a source for the manifests under path, re-read every
// period and on every change. Run it with Run.
func NewFileSource(path, nodeName string, period time.Duration, out chan<- []*v1.Pod, recorder record.EventRecorder) *FileWatcher {
	return &FileWatcher{
		path:     filepath.Clean(path),
		nodeName: nodeName,
		period:   periodOrDefault(period),
		out:      snapshots{out: out},
		recorder: recorder,
		pods:     newStaticPods(nodeName, podutil.FileSource),
		reports:  newReportOnce(),
		lastGood: map[string]*v1.Pod{},
	}
}

// Run watches and re-reads the manifests until ctx is done.
func (s *FileWatcher) Run(ctx context.Context) error {
	watcher, err := fsnotify.NewWatcher()
	if err != nil {
		klog.ErrorS(err, "Cannot watch static pod path, relying on periodic re-reads", "path", s.path)
	} else {
		defer watcher.Close()
	}
	watched := ""
	ensureWatch := func() {
		if watcher == nil || watched != "" {
			return
		}
		dir := s.watchDir()
		if dir == "" {
			return
		}
		if err := watcher.Add(dir); err != nil {
			klog.V(2).InfoS("Cannot watch static pod path yet", "path", dir, "err", err)
			return
		}
		watched = dir
	}
	var events <-chan fsnotify.Event
	var watchErrs <-chan error
	if watcher != nil {
		events, watchErrs = watcher.Events, watcher.Errors
	}

	ensureWatch()
	s.sync(ctx)
	ticker := time.NewTicker(s.period)
	defer ticker.Stop()
	debounce := time.NewTimer(time.Hour)
	debounce.Stop()
	removed := map[string]bool{} // manifest files removed since the last sync
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
			ensureWatch()
			s.sync(ctx)
		case ev := <-events:
			if ev.Name == watched && ev.Has(fsnotify.Remove|fsnotify.Rename) {
				// The watched directory itself went away; watch again once it is back.
				_ = watcher.Remove(watched)
				watched = ""
			}
			if s.relevant(ev) {
				if ev.Has(fsnotify.Remove | fsnotify.Rename) {
					removed[ev.Name] = true
				}
				debounce.Reset(debounceDelay)
			}
		case err := <-watchErrs:
			klog.ErrorS(err, "Error watching static pod path", "path", s.path)
		case <-debounce.C:
			ensureWatch()
			s.flushRemovals(ctx, removed)
			clear(removed)
			s.sync(ctx)
		}
	}
}

// watchDir is the directory to watch: path itself, or its parent when path
// is a single file. "" while path does not exist.
func (s *FileWatcher) watchDir() string {
	info, err := os.Stat(s.path)
	if err != nil {
		return ""
	}
	if info.IsDir() {
		return s.path
	}
	return filepath.Dir(s.path)
}

func (s *FileWatcher) relevant(ev fsnotify.Event) bool {
	if ev.Op == fsnotify.Chmod {
		return false
	}
	if ev.Name == s.path {
		return true
	}
	return filepath.Dir(ev.Name) == s.path && !ignoredName(filepath.Base(ev.Name))
}

// ignoredName skips hidden files and editors' swap and backup files.
func ignoredName(name string) bool {
	if strings.HasPrefix(name, ".") || strings.HasSuffix(name, "~") ||
		(strings.HasPrefix(name, "#") && strings.HasSuffix(name, "#")) {
		return true
	}
	switch filepath.Ext(name) {
	case ".swp", ".swo", ".swx", ".bak", ".orig", ".tmp":
		return true
	}
	return false
}

// flushRemovals sends the pods without those read from files removed since the last sync.
// A manifest deleted and put back at once then still stops and restarts its pod, as it does
// when the two are seen apart, instead of the put-back hiding the deletion.
func (s *FileWatcher) flushRemovals(ctx context.Context, removed map[string]bool) {
	keep := []*v1.Pod{}
	dropped := false
	for file, pod := range s.lastGood {
		if removed[file] {
			dropped = true
			delete(s.lastGood, file)
			continue
		}
		keep = append(keep, pod)
	}
	if dropped && s.out.send(ctx, keep) {
		klog.V(2).InfoS("Static pod manifests removed", "path", s.path, "pods", len(keep))
	}
}

// sync re-reads everything and sends a snapshot if it differs from the last one.
func (s *FileWatcher) sync(ctx context.Context) {
	pods, err := s.readAll()
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			s.logReadErr("Static pod path does not exist yet, will retry", err)
			pods = []*v1.Pod{}
			clear(s.lastGood)
		} else {
			s.logReadErr("Cannot read static pod path, keeping the last pods", err)
			if s.out.sent {
				return
			}
			pods = []*v1.Pod{}
		}
	} else if s.readErr != "" {
		klog.InfoS("Static pod path is readable", "path", s.path)
		s.readErr = ""
	}
	s.pods.forgetOthers(pods)
	if s.out.send(ctx, pods) {
		klog.V(2).InfoS("Sent static pods from files", "path", s.path, "pods", len(pods))
	}
}

func (s *FileWatcher) logReadErr(msg string, err error) {
	if err.Error() == s.readErr {
		return
	}
	s.readErr = err.Error()
	klog.ErrorS(err, msg, "path", s.path)
}

// readAll returns the pods of every usable manifest, in file name order.
func (s *FileWatcher) readAll() ([]*v1.Pod, error) {
	info, err := os.Stat(s.path)
	if err != nil {
		return nil, err
	}
	var files []string
	if info.IsDir() {
		if files, err = s.listDir(); err != nil {
			return nil, err
		}
	} else {
		files = []string{s.path}
	}
	pods := []*v1.Pod{}
	dups := newDuplicates()
	for _, file := range files {
		if pod := s.usablePod(file, dups); pod != nil {
			pods = append(pods, pod)
		}
	}
	present := make(map[string]bool, len(files))
	for _, file := range files {
		present[file] = true
	}
	for file := range s.lastGood {
		if !present[file] {
			delete(s.lastGood, file)
		}
	}
	for file := range s.reports.reported {
		if !present[file] {
			s.reports.forget(file)
		}
	}
	return pods, nil
}

// usablePod returns the pod file defines, or the last good one when it is now
// bad (a half-saved edit must not kill a running pod), or nil.
func (s *FileWatcher) usablePod(file string, dups *duplicates) *v1.Pod {
	data, err := os.ReadFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		return nil // removed since listing
	}
	var pod *v1.Pod
	if err != nil {
		err = decodeErr("read: %v", err)
		data = []byte(err.Error())
	} else if pod, err = s.pods.fromManifest(data, file); err == nil {
		if dup := dups.check(pod); dup != "" {
			err = invalidErr(errors.New(dup))
		}
	}
	if err == nil {
		s.lastGood[file] = pod
		s.reports.forget(file)
		return pod
	}
	s.reject(file, data, err)
	if old := s.lastGood[file]; old != nil && dups.check(old) == "" {
		return old
	}
	return nil
}

// listDir returns the regular files (symlinks followed) directly in path.
func (s *FileWatcher) listDir() ([]string, error) {
	entries, err := os.ReadDir(s.path)
	if err != nil {
		return nil, err
	}
	var files []string
	for _, e := range entries {
		if ignoredName(e.Name()) {
			continue
		}
		file := filepath.Join(s.path, e.Name())
		info, err := os.Stat(file)
		if err != nil {
			klog.V(2).InfoS("Skipping unreadable static pod file", "file", file, "err", err)
			continue
		}
		if !info.Mode().IsRegular() {
			klog.V(4).InfoS("Skipping non-regular entry in static pod path", "file", file)
			continue
		}
		files = append(files, file)
	}
	return files, nil
}

// reject logs and records a bad manifest, once per content.
func (s *FileWatcher) reject(file string, content []byte, err error) {
	if !s.reports.first(file, content) {
		return
	}
	klog.ErrorS(err, "Ignoring bad static pod manifest", "file", file, "reason", errorReason(err))
	if old := s.lastGood[file]; old != nil {
		klog.InfoS("Keeping the previous version of the static pod", "file", file, "pod", klog.KObj(old))
	}
	recordBadManifest(s.recorder, s.nodeName, file, err)
}
