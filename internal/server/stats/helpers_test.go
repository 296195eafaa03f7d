package stats

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodelet/nodelet/internal/runtime/container"
)

// fakeRuntime is a hand-written cri.StatsProvider.
type fakeRuntime struct {
	mu      sync.Mutex
	stats   []*runtimeapi.ContainerStats
	imageFs *runtimeapi.ImageFsInfoResponse
	pids    map[string]int
	listErr error
	calls   map[string]int
}

func newFakeRuntime() *fakeRuntime {
	return &fakeRuntime{pids: map[string]int{}, calls: map[string]int{}, imageFs: &runtimeapi.ImageFsInfoResponse{}}
}

func (f *fakeRuntime) ListContainerStats(context.Context) ([]*runtimeapi.ContainerStats, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls["ListContainerStats"]++
	return f.stats, f.listErr
}

func (f *fakeRuntime) ImageFsInfo(context.Context) (*runtimeapi.ImageFsInfoResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls["ImageFsInfo"]++
	return f.imageFs, nil
}

func (f *fakeRuntime) SandboxPID(_ context.Context, id string) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls["SandboxPID"]++
	return f.pids[id], nil
}

func (f *fakeRuntime) count(method string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[method]
}

// setUsage replaces the stats of container id (running: with cpu and memory).
func (f *fakeRuntime) setUsage(id, podUID, name string, at time.Time, cpuNanos, workingSet uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	st := &runtimeapi.ContainerStats{
		Attributes: &runtimeapi.ContainerAttributes{
			Id: id, Metadata: &runtimeapi.ContainerMetadata{Name: name},
			Labels: map[string]string{container.LabelPodUID: podUID, container.LabelContainerName: name},
		},
		Cpu: &runtimeapi.CpuUsage{Timestamp: at.UnixNano(), UsageCoreNanoSeconds: &runtimeapi.UInt64Value{Value: cpuNanos}},
		Memory: &runtimeapi.MemoryUsage{
			Timestamp: at.UnixNano(), WorkingSetBytes: &runtimeapi.UInt64Value{Value: workingSet},
			UsageBytes: &runtimeapi.UInt64Value{Value: workingSet * 2}, RssBytes: &runtimeapi.UInt64Value{Value: workingSet / 2},
			PageFaults: &runtimeapi.UInt64Value{Value: 10}, MajorPageFaults: &runtimeapi.UInt64Value{Value: 1},
		},
		WritableLayer: &runtimeapi.FilesystemUsage{
			Timestamp: at.UnixNano(), FsId: &runtimeapi.FilesystemIdentifier{Mountpoint: os.TempDir()},
			UsedBytes: &runtimeapi.UInt64Value{Value: 8192}, InodesUsed: &runtimeapi.UInt64Value{Value: 4},
		},
	}
	for i, s := range f.stats {
		if s.Attributes.Id == id {
			f.stats[i] = st
			return
		}
	}
	f.stats = append(f.stats, st)
}

// writeFiles creates files (and their directories) under root.
func writeFiles(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		path := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

const netDev = `Inter-|   Receive                                                |  Transmit
 face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed
    lo: 1000 10 0 0 0 0 0 0 1000 10 0 0 0 0 0 0
  eth0: 5000 50 1 0 0 0 0 0 7000 70 2 0 0 0 0 0
nodelet0:300 3 0 0 0 0 0 0 400 4 0 0 0 0 0 0
vethabc: 9 1 0 0 0 0 0 0 9 1 0 0 0 0 0 0
`

// fakeHost writes a cgroup v1 host: 4 GiB of memory, 3 GiB used of which 1 GiB inactive file.
func fakeHost(t *testing.T) HostPaths {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"proc/meminfo":                        "MemTotal:        4194304 kB\nMemFree:          524288 kB\nInactive(file):   262144 kB\nAnonPages:        131072 kB\n",
		"proc/stat":                           "cpu  100 0 50 1000 5 0 0 0 0 0\ncpu0 100 0 50 1000 5 0 0 0 0 0\nbtime 1700000000\n",
		"proc/net/dev":                        netDev,
		"proc/sys/kernel/pid_max":             "4194304\n",
		"proc/loadavg":                        "0.10 0.20 0.30 2/345 999\n",
		"proc/4242/net/dev":                   netDev,
		"cgroup/cpuacct/cpuacct.usage":        "5000000000\n",
		"cgroup/memory/memory.usage_in_bytes": "3221225472\n",
		"cgroup/memory/memory.stat":           "cache 1\nrss 2\ntotal_rss 536870912\ntotal_inactive_file 1073741824\npgfault 777\npgmajfault 7\ntotal_pgfault 2000000000\ntotal_pgmajfault 70000\n",
	})
	return HostPaths{Proc: filepath.Join(dir, "proc"), Cgroup: filepath.Join(dir, "cgroup")}
}

func testPod(name string, containers ...string) *v1.Pod {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)}}
	for _, c := range containers {
		pod.Spec.Containers = append(pod.Spec.Containers, v1.Container{Name: c, Image: "busybox"})
	}
	return pod
}

func withMemoryLimit(pod *v1.Pod, container string, limit string) {
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == container {
			pod.Spec.Containers[i].Resources.Limits = v1.ResourceList{v1.ResourceMemory: resource.MustParse(limit)}
		}
	}
}

func u64(p *uint64) uint64 {
	if p == nil {
		return 1<<64 - 1 // stands out in failures
	}
	return *p
}

type v1Pod = v1.Pod

var metaTime1700000000 = metav1.NewTime(time.Unix(1700000000, 0))

func volume(name string) v1.Volume {
	return v1.Volume{Name: name, VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}
}

func u64p(p *int64) int64 {
	if p == nil {
		return -1
	}
	return *p
}

// measureVolumes has the volume meter walk every pod's emptyDirs now, as its first round
// would, for tests that read summaries without running the meter.
func measureVolumes(p *Provider) {
	for _, pod := range p.d.Pods() {
		if hasEmptyDir(pod) {
			pv := &podVolumes{figures: map[string]measured{}}
			p.volumes.measure(context.Background(), pod, pv)
			p.volumes.mu.Lock()
			p.volumes.meters[pod.UID] = pv
			p.volumes.mu.Unlock()
		}
	}
}
