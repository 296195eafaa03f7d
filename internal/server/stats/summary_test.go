package stats

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/nodelet/nodelet/internal/runtime/container"
)

type summaryEnv struct {
	p        *Provider
	rt       *fakeRuntime
	now      time.Time
	rootDir  string
	logsDir  string
	started  time.Time
	statuses map[types.UID]*container.PodStatus
}

// newSummaryEnv sets up pod "web" (app + side running, an emptyDir, logs, a sandbox with a
// network namespace), pod "done" (sandbox stopped, container exited) and pod "waiting" (not
// on the runtime yet).
func newSummaryEnv(t *testing.T) *summaryEnv {
	dir := t.TempDir()
	e := &summaryEnv{
		rt: newFakeRuntime(), now: time.Unix(2000, 0), started: time.Unix(1900, 0),
		rootDir: filepath.Join(dir, "root"), logsDir: filepath.Join(dir, "logs"),
		statuses: map[types.UID]*container.PodStatus{},
	}
	web := testPod("web", "side", "app")
	withMemoryLimit(web, "app", "64Mi")
	web.Spec.Volumes = append(web.Spec.Volumes, volume("cache"))
	done, waiting := testPod("done", "job"), testPod("waiting", "main")
	e.statuses[web.UID] = &container.PodStatus{
		UID: web.UID, Sandboxes: []*container.SandboxStatus{{ID: "sb-web", Ready: true, CreatedAt: e.started}},
		Containers: []*container.ContainerStatus{
			{ID: "c-app", Name: "app", State: container.StateRunning, CreatedAt: e.started.Add(2 * time.Second)},
			{ID: "c-side", Name: "side", State: container.StateRunning, CreatedAt: e.started.Add(time.Second)},
			{ID: "c-app-old", Name: "app", State: container.StateExited, CreatedAt: e.started},
		},
	}
	e.statuses[done.UID] = &container.PodStatus{
		UID: done.UID, Sandboxes: []*container.SandboxStatus{{ID: "sb-done", CreatedAt: e.started}},
		Containers: []*container.ContainerStatus{{ID: "c-job", Name: "job", State: container.StateExited}},
	}
	e.rt.setUsage("c-app", "uid-web", "app", e.now, 2e9, 10<<20)
	e.rt.setUsage("c-side", "uid-web", "side", e.now, 1e9, 2<<20)
	e.rt.setUsage("c-job", "uid-done", "job", e.now, 1, 1) // stale: the cache says exited
	e.rt.setUsage("c-elsewhere", "uid-other", "x", e.now, 1, 1)
	e.rt.pids["sb-web"] = 4242
	e.rt.imageFs = &runtimeapi.ImageFsInfoResponse{ImageFilesystems: []*runtimeapi.FilesystemUsage{{
		Timestamp: e.now.UnixNano(), FsId: &runtimeapi.FilesystemIdentifier{Mountpoint: dir},
		UsedBytes: &runtimeapi.UInt64Value{Value: 1000}, InodesUsed: &runtimeapi.UInt64Value{Value: 10},
	}}}
	writeFiles(t, e.rootDir, map[string]string{
		"pods/uid-web/volumes/kubernetes.io~empty-dir/cache/data": string(make([]byte, 20000)),
	})
	writeFiles(t, e.logsDir, map[string]string{
		"default_web_uid-web/app/0.log": string(make([]byte, 5000)),
		"default_web_uid-web/app/1.log": "x",
	})
	e.p = NewSummaryProvider(Deps{
		NodeName: "node-1", Runtime: e.rt, RootDir: e.rootDir, PodLogsDir: e.logsDir, Host: fakeHost(t),
		Pods: func() []*v1Pod { return []*v1Pod{web, done, waiting} },
		PodStatus: func(uid types.UID) (*container.PodStatus, bool) {
			s, ok := e.statuses[uid]
			return s, ok
		},
		Now: func() time.Time { return e.now },
	})
	measureVolumes(e.p)
	return e
}

func findPod(t *testing.T, s *statsapi.Summary, name string) *statsapi.PodStats {
	t.Helper()
	for i := range s.Pods {
		if s.Pods[i].PodRef.Name == name {
			return &s.Pods[i]
		}
	}
	t.Fatalf("pod %q not in summary %+v", name, s.Pods)
	return nil
}

func TestSummaryNodeStats(t *testing.T) {
	e := newSummaryEnv(t)
	s, err := e.p.Summary(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	n := s.Node
	if n.NodeName != "node-1" || !n.StartTime.Equal(&metaTime1700000000) {
		t.Errorf("node name %q start %v", n.NodeName, n.StartTime)
	}
	if u64(n.CPU.UsageCoreNanoSeconds) != 5e9 || n.CPU.UsageNanoCores != nil {
		t.Errorf("node cpu %+v: want 5e9 ns and no rate from a single sample", n.CPU)
	}
	m := n.Memory
	if u64(m.WorkingSetBytes) != 2<<30 || u64(m.AvailableBytes) != 2<<30 || u64(m.UsageBytes) != 3<<30 ||
		u64(m.RSSBytes) != 512<<20 || u64(m.PageFaults) != 777 || u64(m.MajorPageFaults) != 7 {
		t.Errorf("node memory %+v", m)
	}
	if n.Network == nil || n.Network.Name != "eth0" || u64(n.Network.RxBytes) != 5000 || len(n.Network.Interfaces) != 2 {
		t.Errorf("node network %+v", n.Network)
	}
	if n.Fs == nil || u64(n.Fs.CapacityBytes) == 0 || n.Fs.AvailableBytes == nil || n.Fs.InodesFree == nil {
		t.Errorf("node fs %+v", n.Fs)
	}
	img := n.Runtime.ImageFs
	if u64(img.UsedBytes) != 1000 || u64(img.InodesUsed) != 10 || u64(img.CapacityBytes) == 0 {
		t.Errorf("imageFs %+v", img)
	}
	if n.Runtime.ContainerFs == nil || u64(n.Runtime.ContainerFs.UsedBytes) != 1000 {
		t.Errorf("containerFs should repeat the image filesystem: %+v", n.Runtime.ContainerFs)
	}
	if n.Rlimit == nil || u64p(n.Rlimit.MaxPID) != 4194304 || u64p(n.Rlimit.NumOfRunningProcesses) != 345 {
		t.Errorf("rlimit %+v", n.Rlimit)
	}
}

func TestSummaryPodStats(t *testing.T) {
	e := newSummaryEnv(t)
	s, err := e.p.Summary(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Pods) != 2 {
		t.Fatalf("pods %d, want web and done (waiting has no sandbox)", len(s.Pods))
	}
	if done := findPod(t, s, "done"); len(done.Containers) != 0 || done.CPU != nil {
		t.Errorf("a stopped pod has no running containers: %+v", done)
	}
	web := findPod(t, s, "web")
	if web.PodRef != (statsapi.PodReference{Name: "web", Namespace: "default", UID: "uid-web"}) || !web.StartTime.Time.Equal(e.started) {
		t.Errorf("podRef %+v start %v", web.PodRef, web.StartTime)
	}
	if len(web.Containers) != 2 || web.Containers[0].Name != "app" || web.Containers[1].Name != "side" {
		t.Fatalf("containers %+v, want app and side", web.Containers)
	}
	app := web.Containers[0]
	if !app.StartTime.Time.Equal(e.started.Add(2*time.Second)) || u64(app.CPU.UsageCoreNanoSeconds) != 2e9 ||
		u64(app.Memory.WorkingSetBytes) != 10<<20 || u64(app.Memory.AvailableBytes) != 54<<20 || u64(app.Memory.RSSBytes) != 5<<20 {
		t.Errorf("app stats %+v cpu %+v memory %+v", app, app.CPU, app.Memory)
	}
	if web.Containers[1].Memory.AvailableBytes != nil {
		t.Error("side has no memory limit, so no available bytes")
	}
	if u64(web.CPU.UsageCoreNanoSeconds) != 3e9 || u64(web.Memory.WorkingSetBytes) != 12<<20 || web.Memory.AvailableBytes != nil {
		t.Errorf("pod sums cpu %+v memory %+v", web.CPU, web.Memory)
	}
	if app.Rootfs == nil || u64(app.Rootfs.UsedBytes) != 8192 || u64(app.Rootfs.InodesUsed) != 4 || app.Rootfs.CapacityBytes == nil {
		t.Errorf("rootfs %+v", app.Rootfs)
	}
	if app.Logs == nil || u64(app.Logs.UsedBytes) < 5000 || u64(app.Logs.InodesUsed) != 3 || app.Logs.CapacityBytes == nil {
		t.Errorf("logs %+v: want both log files and their directory", app.Logs)
	}
	if web.Network == nil || web.Network.Name != "eth0" || u64(web.Network.TxBytes) != 7000 || len(web.Network.Interfaces) != 3 {
		t.Errorf("pod network %+v: eth0 default, every interface but lo", web.Network)
	}
	if len(web.VolumeStats) != 1 || web.VolumeStats[0].Name != "cache" || u64(web.VolumeStats[0].UsedBytes) < 20000 {
		t.Fatalf("volumes %+v", web.VolumeStats)
	}
	var want uint64
	for _, c := range web.Containers {
		want += u64(c.Rootfs.UsedBytes) + u64(c.Logs.UsedBytes)
	}
	want += u64(web.VolumeStats[0].UsedBytes)
	if eph := web.EphemeralStorage; eph == nil || u64(eph.UsedBytes) != want || eph.CapacityBytes == nil {
		t.Errorf("ephemeral storage %+v, want used %d", eph, want)
	}
}

func TestSummaryComputesNanoCoresAcrossCallsWithOneCRICallEach(t *testing.T) {
	e := newSummaryEnv(t)
	ctx := context.Background()
	if _, err := e.p.Summary(ctx); err != nil {
		t.Fatal(err)
	}
	e.now = e.now.Add(10 * time.Second)
	e.rt.setUsage("c-app", "uid-web", "app", e.now, 2e9+5e9, 10<<20) // half a core over 10s
	e.rt.setUsage("c-side", "uid-web", "side", e.now, 1e9+1e9, 2<<20)
	s, err := e.p.Summary(ctx)
	if err != nil {
		t.Fatal(err)
	}
	web := findPod(t, s, "web")
	if got := web.Containers[0].CPU.UsageNanoCores; got == nil || *got != 5e8 {
		t.Errorf("app nanoCores %v, want 5e8", got)
	}
	if got := web.CPU.UsageNanoCores; got == nil || *got != 6e8 {
		t.Errorf("pod nanoCores %v, want the containers' sum 6e8", got)
	}
	if got := s.Node.CPU.UsageNanoCores; got == nil || *got != 0 {
		t.Errorf("node nanoCores %v, want 0 (the counter did not move)", got)
	}
	if n := e.rt.count("ListContainerStats"); n != 2 {
		t.Errorf("ListContainerStats called %d times for 2 summaries", n)
	}
	if n := e.rt.count("SandboxPID"); n != 1 {
		t.Errorf("SandboxPID called %d times; the pid should be remembered", n)
	}
}

func TestCPUAndMemorySummaryLeavesTheRestOut(t *testing.T) {
	e := newSummaryEnv(t)
	s, err := e.p.CPUAndMemorySummary(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	n := s.Node
	if n.CPU == nil || n.Memory == nil || n.Fs != nil || n.Runtime != nil || n.Network != nil || n.Rlimit != nil {
		t.Errorf("node %+v: want only cpu and memory", n)
	}
	web := findPod(t, s, "web")
	if web.CPU == nil || web.Memory == nil || web.Network != nil || web.VolumeStats != nil || web.EphemeralStorage != nil {
		t.Errorf("pod %+v: want only cpu and memory", web)
	}
	for _, c := range web.Containers {
		if c.CPU == nil || c.Memory == nil || c.Rootfs != nil || c.Logs != nil {
			t.Errorf("container %+v: want only cpu and memory", c)
		}
	}
	if e.rt.count("ImageFsInfo") != 0 || e.rt.count("SandboxPID") != 0 || e.rt.count("ListContainerStats") != 1 {
		t.Errorf("CRI calls %v, want one ListContainerStats only", e.rt.calls)
	}
}

func TestSummaryFailsWhenTheRuntimeDoes(t *testing.T) {
	e := newSummaryEnv(t)
	e.rt.listErr = errors.New("runtime down")
	if _, err := e.p.Summary(context.Background()); err == nil {
		t.Fatal("want an error")
	}
	e.rt.listErr = nil
	os.RemoveAll(e.p.d.Host.Proc)
	if _, err := e.p.Summary(context.Background()); err == nil {
		t.Fatal("want an error without node memory figures")
	}
}

func TestCountRuntime(t *testing.T) {
	pods := []*container.RunningPod{
		{Node: "node-1", Sandboxes: []*container.SandboxStatus{{Ready: true}}, Containers: []*container.ContainerStatus{
			{State: container.StateRunning}, {State: container.StateExited}}},
		{Sandboxes: []*container.SandboxStatus{{Ready: false}}, Containers: []*container.ContainerStatus{{State: container.StateExited}}},
		{Node: "other", Sandboxes: []*container.SandboxStatus{{Ready: true}}, Containers: []*container.ContainerStatus{{State: container.StateRunning}}},
	}
	c := CountRuntime(pods, "node-1")
	if c.RunningPods != 1 || c.Containers["running"] != 1 || c.Containers["exited"] != 2 || len(c.Containers) != 2 {
		t.Fatalf("counts %+v", c)
	}
}
