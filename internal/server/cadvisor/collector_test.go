package cadvisor

import (
	"context"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/opencontainers/cgroups"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/nodelet/nodelet/internal/runtime/container"
	"github.com/nodelet/nodelet/internal/server/stats"
)

func write(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// webPod is the source of one pod, ns/web, whose one container c1 runs, with its cgroup at
// podCgroup of the tree under root.
func webPod(root, podCgroup string) Source {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "uid1"}}
	return Source{
		Pods: func() []*v1.Pod { return []*v1.Pod{pod} },
		PodStatus: func(types.UID) (*container.PodStatus, bool) {
			return &container.PodStatus{Containers: []*container.ContainerStatus{{ID: "c1", Name: "app", Image: "busybox:1.36", State: container.StateRunning}}}, true
		},
		PodCgroup:  func(types.UID) string { return podCgroup },
		CgroupRoot: root + "/cgroup", Proc: root + "/proc", Sys: root + "/sys",
	}
}

// scrape is the handler's answer to one GET.
func scrape(src Source) string {
	rec := httptest.NewRecorder()
	NewHandler(src).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics/cadvisor", nil))
	body, _ := io.ReadAll(rec.Body)
	return string(body)
}

func TestSeriesFromCgroupFiles(t *testing.T) {
	root := t.TempDir()
	ctr := "kubepods/burstable/poduid1/c1"
	write(t, root, map[string]string{
		"cgroup/cpu,cpuacct/cpuacct.usage":                         "90000000000\n",
		"cgroup/cpu,cpuacct/" + ctr + "/cpuacct.usage":             "1500000000\n",
		"cgroup/cpu,cpuacct/" + ctr + "/cpuacct.stat":              "user 120\nsystem 30\n",
		"cgroup/cpu,cpuacct/" + ctr + "/cpu.stat":                  "nr_periods 10\nnr_throttled 4\nthrottled_time 2000000000\n",
		"cgroup/cpu,cpuacct/" + ctr + "/cpu.shares":                "204\n",
		"cgroup/cpu,cpuacct/" + ctr + "/cpu.cfs_quota_us":          "20000\n",
		"cgroup/cpu,cpuacct/" + ctr + "/cpu.cfs_period_us":         "100000\n",
		"cgroup/memory/" + ctr + "/memory.usage_in_bytes":          "1000\n",
		"cgroup/memory/" + ctr + "/memory.limit_in_bytes":          "67108864\n",
		"cgroup/memory/" + ctr + "/memory.stat":                    "total_cache 300\ntotal_rss 600\ntotal_mapped_file 50\ntotal_inactive_file 200\npgfault 40\ntotal_pgmajfault 3\n",
		"cgroup/memory/" + ctr + "/memory.soft_limit_in_bytes":     "9223372036854771712\n",
		"cgroup/memory/" + ctr + "/memory.memsw.limit_in_bytes":    "134217728\n",
		"cgroup/memory/" + ctr + "/memory.memsw.usage_in_bytes":    "1500\n",
		"cgroup/memory/" + ctr + "/memory.oom_control":             "oom_kill_disable 0\nunder_oom 0\noom_kill 2\n",
		"cgroup/memory/kubepods/burstable/poduid1/memory.stat":     "total_rss 1\n",
		"cgroup/pids/" + ctr + "/cgroup.procs":                     "7\n",
		"cgroup/pids/" + ctr + "/tasks":                            "7\n8\n",
		"cgroup/pids/" + ctr + "/pids.max":                         "max\n",
		"cgroup/blkio/" + ctr + "/blkio.throttle.io_service_bytes": "8:0 Read 4096\n8:0 Write 8192\n8:0 Total 12288\nTotal 12288\n",
		"cgroup/blkio/" + ctr + "/blkio.throttle.io_serviced":      "8:0 Read 1\n8:0 Write 2\n8:0 Total 3\nTotal 3\n",
		"sys/dev/block/8:0/uevent":                                 "MAJOR=8\nMINOR=0\nDEVNAME=sda\n",
		"proc/7/limits":                                            "Limit Soft Hard Units\nMax open files            1024                 4096                 files\n",
	})
	if err := os.MkdirAll(filepath.Join(root, "proc/7/fd"), 0o755); err != nil {
		t.Fatal(err)
	}
	_ = os.Symlink("socket:[123]", filepath.Join(root, "proc/7/fd/3"))
	_ = os.Symlink("/dev/null", filepath.Join(root, "proc/7/fd/0"))
	src := webPod(root, "/kubepods/burstable/poduid1")
	src.MachineMemory, src.OOMs = 1<<30, &OOMCounter{}
	src.Layers = func(context.Context) (map[string]stats.Layer, error) {
		return map[string]stats.Layer{"c1": {Device: "8:0", UsedBytes: 4096, CapacityBytes: 1 << 30, InodesUsed: ptr.To[uint64](12)}}, nil
	}
	src.OOMs.Add("/kubepods/burstable/poduid1/old")
	text := scrape(src)
	l := `{container="app",id="/kubepods/burstable/poduid1/c1",image="busybox:1.36",name="c1",namespace="ns",pod="web"}`
	pl := `{container="",id="/kubepods/burstable/poduid1",image="",name="",namespace="ns",pod="web"}`
	for _, want := range []string{
		`container_cpu_usage_seconds_total{container="",id="/",image="",name="",namespace="",pod=""} 90`,
		"container_cpu_usage_seconds_total" + l + " 1.5",
		"container_cpu_cfs_throttled_periods_total" + l + " 4",
		"container_cpu_cfs_throttled_seconds_total" + l + " 2",
		"container_memory_working_set_bytes" + l + " 800",
		"container_memory_rss" + l + " 600",
		"container_memory_cache" + l + " 300",
		"container_oom_events_total" + l + " 2",
		"container_oom_events_total" + pl + " 1",
		"container_spec_cpu_quota" + l + " 20000",
		"container_spec_memory_limit_bytes" + l + " 6.7108864e+07",
		"container_processes" + l + " 1",
		"container_threads" + l + " 2",
		"container_file_descriptors" + l + " 2",
		"container_sockets" + l + " 1",
		`container_ulimits_soft{container="app",id="/kubepods/burstable/poduid1/c1",image="busybox:1.36",name="c1",namespace="ns",pod="web",ulimit="max_open_files"} 1024`,
		`container_fs_writes_bytes_total{container="app",device="/dev/sda",id="/kubepods/burstable/poduid1/c1",image="busybox:1.36",name="c1",namespace="ns",pod="web"} 8192`,
		"machine_memory_bytes{",
		"container_cpu_user_seconds_total" + l + " 1.2",
		"container_cpu_system_seconds_total" + l + " 0.3",
		"container_memory_swap" + l + " 500",
		"container_spec_memory_reservation_limit_bytes" + l + " 0",
		"container_spec_memory_swap_limit_bytes" + l + " 1.34217728e+08",
		"container_threads_max" + l + " 0",
		`container_memory_failures_total{container="app",failure_type="pgfault",id="/kubepods/burstable/poduid1/c1",image="busybox:1.36",name="c1",namespace="ns",pod="web",scope="container"} 40`,
		`container_memory_failures_total{container="app",failure_type="pgmajfault",id="/kubepods/burstable/poduid1/c1",image="busybox:1.36",name="c1",namespace="ns",pod="web",scope="hierarchy"} 3`,
		`container_fs_writes_total{container="app",device="/dev/sda",id="/kubepods/burstable/poduid1/c1",image="busybox:1.36",name="c1",namespace="ns",pod="web"} 2`,
		`container_blkio_device_usage_total{container="app",device="/dev/sda",id="/kubepods/burstable/poduid1/c1",image="busybox:1.36",major="8",minor="0",name="c1",namespace="ns",operation="Total",pod="web"} 12288`,
		`container_fs_usage_bytes{container="app",device="/dev/sda",id="/kubepods/burstable/poduid1/c1",image="busybox:1.36",name="c1",namespace="ns",pod="web"} 4096`,
		`container_fs_limit_bytes{container="app",device="/dev/sda",id="/kubepods/burstable/poduid1/c1",image="busybox:1.36",name="c1",namespace="ns",pod="web"} 1.073741824e+09`,
		`container_fs_inodes_free{container="app",device="/dev/sda",id="/kubepods/burstable/poduid1/c1",image="busybox:1.36",name="c1",namespace="ns",pod="web"} 0`,
		`container_fs_inodes_total{container="app",device="/dev/sda",id="/kubepods/burstable/poduid1/c1",image="busybox:1.36",name="c1",namespace="ns",pod="web"} 12`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("missing %s", want)
		}
	}
	// The pod's own cgroup has no writable layer: no container_fs series for it.
	if strings.Contains(text, "container_fs_usage_bytes"+`{container="",`) {
		t.Error("a pod cgroup got container_fs_usage_bytes")
	}
	if t.Failed() {
		t.Log(text)
	}
}

// TestSeriesFromCgroupV2FilesUnderSystemdSlices reads a unified (v2) tree, laid out as the
// systemd driver lays out a pod: a pod slice with the runtime's container scope in it.
func TestSeriesFromCgroupV2FilesUnderSystemdSlices(t *testing.T) {
	cgroups.TestMode = true // the library reads a temporary tree, not cgroupfs
	t.Cleanup(func() { cgroups.TestMode = false })
	root := t.TempDir()
	pod := "kubepods.slice/kubepods-burstable.slice/kubepods-burstable-poduid1.slice"
	ctr := pod + "/cri-containerd-c1.scope"
	write(t, root, map[string]string{
		"cgroup/cgroup.controllers":         "cpu memory pids io\n",
		"cgroup/" + ctr + "/cpu.stat":       "usage_usec 1500000\nuser_usec 1200000\nsystem_usec 300000\nnr_periods 10\nnr_throttled 4\nthrottled_usec 2000000\n",
		"cgroup/" + ctr + "/cpu.weight":     "8\n",
		"cgroup/" + ctr + "/cpu.max":        "20000 100000\n",
		"cgroup/" + ctr + "/memory.current": "1000\n",
		"cgroup/" + ctr + "/memory.max":     "67108864\n",
		"cgroup/" + ctr + "/memory.peak":    "1200\n",
		"cgroup/" + ctr + "/memory.stat":    "anon 600\nfile 300\nfile_mapped 50\ninactive_file 200\npgfault 40\npgmajfault 3\n",
		"cgroup/" + ctr + "/memory.events":  "low 0\nhigh 0\nmax 0\noom 2\noom_kill 2\n",
		"cgroup/" + ctr + "/pids.current":   "1\n",
		"cgroup/" + ctr + "/pids.max":       "max\n",
		"cgroup/" + ctr + "/io.stat":        "8:0 rbytes=4096 wbytes=8192 rios=1 wios=2 dbytes=0 dios=0\n",
		"cgroup/" + ctr + "/cgroup.procs":   "7\n",
		"cgroup/" + ctr + "/cgroup.threads": "7\n8\n",
		"cgroup/" + pod + "/memory.current": "1100\n",
		"cgroup/" + pod + "/memory.max":     "max\n",
		"cgroup/" + pod + "/memory.stat":    "anon 1\n",
		"sys/dev/block/8:0/uevent":          "MAJOR=8\nMINOR=0\nDEVNAME=sda\n",
	})
	text := scrape(webPod(root, "/"+pod))
	l := `{container="app",id="/` + ctr + `",image="busybox:1.36",name="c1",namespace="ns",pod="web"}`
	for _, want := range []string{
		"container_cpu_usage_seconds_total" + l + " 1.5",
		"container_cpu_user_seconds_total" + l + " 1.2",
		"container_cpu_cfs_throttled_periods_total" + l + " 4",
		"container_cpu_cfs_throttled_seconds_total" + l + " 2",
		"container_spec_cpu_shares" + l + " 185",
		"container_spec_cpu_quota" + l + " 20000",
		"container_spec_memory_limit_bytes" + l + " 6.7108864e+07",
		"container_memory_usage_bytes" + l + " 1000",
		"container_memory_max_usage_bytes" + l + " 1200",
		"container_memory_working_set_bytes" + l + " 800",
		"container_memory_rss" + l + " 600",
		"container_memory_cache" + l + " 300",
		"container_oom_events_total" + l + " 2",
		"container_threads_max" + l + " 0",
		"container_processes" + l + " 1",
		"container_threads" + l + " 2",
		`container_fs_writes_bytes_total{container="app",device="/dev/sda",id="/` + ctr + `",image="busybox:1.36",name="c1",namespace="ns",pod="web"} 8192`,
		`container_fs_reads_total{container="app",device="/dev/sda",id="/` + ctr + `",image="busybox:1.36",name="c1",namespace="ns",pod="web"} 1`,
		`container_memory_usage_bytes{container="",id="/` + pod + `",image="",name="",namespace="ns",pod="web"} 1100`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("missing %s", want)
		}
	}
	if t.Failed() {
		t.Log(text)
	}
}
