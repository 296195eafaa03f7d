package gc

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/nodelet/nodelet/internal/runtime/container"
)

func nodeRef() *v1.ObjectReference {
	return &v1.ObjectReference{Kind: "Node", Name: testNode, UID: testNode}
}

func mkdir(t *testing.T, dir string, mtime time.Time) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(dir, mtime, mtime); err != nil {
		t.Fatal(err)
	}
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

func TestPodLogDirs(t *testing.T) {
	other := newRunningPod("uid-other", "node-2", base).sandbox("sb-other", true, 10).pod
	rt := &fakeRuntime{pods: []*container.RunningPod{other}}
	g, clk := testGC(t, rt, DefaultPolicy, "uid-live")
	old := clk.Now().Add(-time.Hour)
	logs := g.opts.PodLogsDir
	dirs := map[string]bool{ // dir → kept
		"ns_gone_uid-gone":   false,
		"ns_live_uid-live":   true,
		"ns_other_uid-other": true, // another node's pod, alive on the shared runtime
		"ns_fresh_uid-fresh": true, // just made, maybe by another nodelet about to run its sandbox
		"not-a-pod-dir":      true,
	}
	for name := range dirs {
		mkdir(t, filepath.Join(logs, name), old)
	}
	mkdir(t, filepath.Join(logs, "ns_fresh_uid-fresh"), clk.Now().Add(-10*time.Second))

	if err := g.GarbageCollect(context.Background()); err != nil {
		t.Fatal(err)
	}
	for name, kept := range dirs {
		if exists(filepath.Join(logs, name)) != kept {
			t.Errorf("%s: kept=%v, want %v", name, !kept, kept)
		}
	}
}

func TestPodLogDirWaitsForTheRuntimeToLetGo(t *testing.T) {
	gone := newRunningPod("uid-gone", testNode, base).sandbox("sb", false, 100).
		container("c", "app", "sb", exited, 90).pod
	rt := &fakeRuntime{pods: []*container.RunningPod{gone}, failRm: map[string]bool{"c": true}}
	g, clk := testGC(t, rt, DefaultPolicy)
	dir := filepath.Join(g.opts.PodLogsDir, "ns_gone_uid-gone")
	mkdir(t, dir, clk.Now().Add(-time.Hour))
	if err := g.GarbageCollect(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !exists(dir) {
		t.Fatal("log dir removed while its container could not be")
	}
	delete(rt.failRm, "c")
	if err := g.GarbageCollect(context.Background()); err != nil {
		t.Fatal(err)
	}
	if exists(dir) {
		t.Error("log dir kept after its pod left the runtime")
	}
	wantRemoved(t, rt, "c", "sb")
}

func TestDanglingLogLinks(t *testing.T) {
	rt := &fakeRuntime{states: map[string]container.ContainerState{"aaa": exited, "bbb": running}}
	g, _ := testGC(t, rt, DefaultPolicy)
	dir := g.opts.ContainerLogsDir
	mkdir(t, dir, time.Now())
	target := filepath.Join(t.TempDir(), "0.log")
	if err := os.WriteFile(target, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	links := map[string]string{ // link → target
		"web_ns_app-aaa.log":  "/nonexistent/0.log", // exited: removed
		"web_ns_app-bbb.log":  "/nonexistent/1.log", // running, mid-rotation: kept
		"web_ns_app-ccc.log":  "/nonexistent/2.log", // container gone: removed
		"web_ns_live-ddd.log": target,               // target present: kept
	}
	for name, to := range links {
		if err := os.Symlink(to, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := g.GarbageCollect(context.Background()); err != nil {
		t.Fatal(err)
	}
	for name, kept := range map[string]bool{
		"web_ns_app-aaa.log": false, "web_ns_app-bbb.log": true, "web_ns_app-ccc.log": false, "web_ns_live-ddd.log": true,
	} {
		if exists(filepath.Join(dir, name)) != kept {
			t.Errorf("%s: kept=%v, want %v", name, !kept, kept)
		}
	}
}

func TestOrphanedPodDirs(t *testing.T) {
	held := newRunningPod("uid-held", testNode, base).sandbox("sb", true, 10).pod
	rt := &fakeRuntime{pods: []*container.RunningPod{held}}
	g, _ := testGC(t, rt, DefaultPolicy, "uid-live")
	pods := filepath.Join(g.opts.RootDir, "pods")
	for _, uid := range []string{"uid-gone", "uid-live", "uid-mounted", "uid-held"} {
		mkdir(t, filepath.Join(pods, uid, "volumes", "kubernetes.io~empty-dir", "cache"), time.Now())
	}
	mountinfo := "22 1 8:1 / / rw,relatime - ext4 /dev/vda rw\n" +
		"400 22 0:50 / " + filepath.Join(pods, "uid-mounted", "volumes", "kubernetes.io~empty-dir", "cache") +
		" rw,nosuid,nodev - tmpfs tmpfs rw\n"
	if err := os.WriteFile(g.opts.Mountinfo, []byte(mountinfo), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := g.GarbageCollect(context.Background()); err != nil {
		t.Fatal(err)
	}
	for uid, kept := range map[string]bool{"uid-gone": false, "uid-live": true, "uid-mounted": true, "uid-held": true} {
		if exists(filepath.Join(pods, uid)) != kept {
			t.Errorf("%s: kept=%v, want %v", uid, !kept, kept)
		}
	}

	// Sources not ready yet: nothing is known to be gone.
	mkdir(t, filepath.Join(pods, "uid-gone"), time.Now())
	g.alwaysReady, g.opts.SourcesReady = false, func() bool { return false }
	if err := g.GarbageCollect(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !exists(filepath.Join(pods, "uid-gone")) {
		t.Error("pod dir removed before the sources were ready")
	}
}
