//go:build real

package stats

// Tests against a real CRI runtime. They run only when NODELET_E2E_CRI names its endpoint:
//
//	NODELET_E2E_CRI=unix:///run/nodelet/containerd/containerd.sock go test -tags real ./internal/server/stats -run Real -v
//
// They need root and the images nodelet.local/busybox:1.36 and registry.k8s.io/pause:3.10.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/flowcontrol"

	"github.com/nodelet/nodelet/internal/lib/metrics"
	"github.com/nodelet/nodelet/internal/runtime/container"
	"github.com/nodelet/nodelet/internal/runtime/cri"
	"github.com/nodelet/nodelet/internal/runtime/kuberuntime"
	"github.com/nodelet/nodelet/internal/testutil"
	"github.com/nodelet/nodelet/internal/volumes/volumestest"
)

const (
	realLogsDir = "/var/log/pods"
	realNode    = "stats-e2e" // sandboxes carry it, so other nodelets' housekeeping leaves them alone
)

// realEnv is a runtime manager on the real runtime plus the pods a test started.
type realEnv struct {
	t       *testing.T
	mgr     *kuberuntime.Manager
	cri     *cri.Client
	rootDir string

	mu       sync.Mutex
	pods     []*v1.Pod
	statuses map[types.UID]*container.PodStatus
}

func newRealEnv(t *testing.T) *realEnv {
	client := testutil.RealCRI(t)
	e := &realEnv{t: t, rootDir: t.TempDir(), statuses: map[types.UID]*container.PodStatus{}}
	mgr, err := kuberuntime.NewManager(kuberuntime.Options{
		CRI: client, RootDir: e.rootDir, PodLogsDir: realLogsDir, Recorder: record.NewFakeRecorder(10000), NodeName: realNode,
		Volumes: volumestest.Start(t, e.rootDir),
	})
	if err != nil {
		t.Fatal(err)
	}
	e.mgr, e.cri = mgr, client
	t.Cleanup(func() {
		e.removeAll()
		client.Close()
	})
	return e
}

func (e *realEnv) provider() *Provider {
	return NewSummaryProvider(Deps{
		NodeName: realNode, Runtime: e.cri, RootDir: e.rootDir, PodLogsDir: realLogsDir,
		Pods: func() []*v1.Pod {
			e.mu.Lock()
			defer e.mu.Unlock()
			return append([]*v1.Pod(nil), e.pods...)
		},
		PodStatus: func(uid types.UID) (*container.PodStatus, bool) {
			e.mu.Lock()
			defer e.mu.Unlock()
			s, ok := e.statuses[uid]
			return s, ok
		},
	})
}

// start runs a busybox pod with script and waits until its container runs.
func (e *realEnv) start(prefix, script string, volumes ...v1.Volume) *v1.Pod {
	suffix := make([]byte, 4)
	_, _ = rand.Read(suffix)
	id := hex.EncodeToString(suffix)
	grace := int64(0)
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: prefix + "-" + id, Namespace: "default", UID: types.UID("stats-" + id)},
		Spec: v1.PodSpec{
			RestartPolicy: v1.RestartPolicyAlways, TerminationGracePeriodSeconds: &grace, Volumes: volumes,
			Containers: []v1.Container{{
				Name: "main", Image: "nodelet.local/busybox:1.36", ImagePullPolicy: v1.PullIfNotPresent,
				Command: []string{"sh", "-c", script},
			}},
		},
	}
	for _, v := range volumes {
		pod.Spec.Containers[0].VolumeMounts = append(pod.Spec.Containers[0].VolumeMounts, v1.VolumeMount{Name: v.Name, MountPath: "/" + v.Name})
	}
	e.mu.Lock()
	e.pods = append(e.pods, pod)
	e.mu.Unlock()
	ctx := context.Background()
	backoff := flowcontrol.NewBackOff(time.Second, time.Second)
	testutil.WaitUntil(e.t, 2*time.Minute, "pod "+pod.Name+" running", func() bool {
		st, err := e.mgr.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
		if err != nil {
			e.t.Fatal(err)
		}
		if c := st.FindContainer("main"); c != nil && c.State == container.StateRunning {
			e.mu.Lock()
			e.statuses[pod.UID] = st
			e.mu.Unlock()
			return true
		}
		if res := e.mgr.SyncPod(ctx, pod, st, backoff); res.Err != nil {
			e.t.Fatalf("SyncPod %s: %v", pod.Name, res.Err)
		}
		return false
	})
	return pod
}

func (e *realEnv) removeAll() {
	e.mu.Lock()
	pods := e.pods
	e.pods = nil
	e.mu.Unlock()
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for _, pod := range pods {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			if err := e.mgr.KillPod(ctx, pod, nil, 0); err != nil {
				e.t.Logf("KillPod %s: %v", pod.Name, err)
			}
			if err := e.mgr.RemovePod(ctx, pod.UID); err != nil {
				e.t.Logf("RemovePod %s: %v", pod.Name, err)
			}
		}()
	}
	wg.Wait()
}

func TestRealSummary(t *testing.T) {
	e := newRealEnv(t)
	cache := v1.Volume{Name: "cache", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}
	pod := e.start("summary",
		"echo started; dd if=/dev/zero of=/cache/blob bs=1k count=64 2>/dev/null; i=0; while [ $i -lt 100000 ]; do i=$((i+1)); done; sleep 3600", cache)
	// Volumes are measured once a minute in the background: measure the emptyDir once dd has
	// finished writing the blob.
	blob := filepath.Join(e.rootDir, "pods", string(pod.UID), "volumes", emptyDirPlugin, "cache", "blob")
	waitForSize(t, blob, 64<<10)
	p := e.provider()
	measureVolumes(p)
	ctx := context.Background()
	if _, err := p.Summary(ctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second)
	s, err := p.Summary(ctx)
	if err != nil {
		t.Fatal(err)
	}
	n := s.Node
	t.Logf("node cpu %d ns (%v nanocores), memory working set %d, available %d", u64(n.CPU.UsageCoreNanoSeconds),
		u64(n.CPU.UsageNanoCores), u64(n.Memory.WorkingSetBytes), u64(n.Memory.AvailableBytes))
	if u64(n.CPU.UsageCoreNanoSeconds) == 0 || n.CPU.UsageNanoCores == nil || u64(n.Memory.WorkingSetBytes) == 0 ||
		u64(n.Memory.AvailableBytes) == 0 || n.StartTime.IsZero() {
		t.Errorf("node cpu %+v memory %+v start %v", n.CPU, n.Memory, n.StartTime)
	}
	if n.Fs == nil || u64(n.Fs.CapacityBytes) == 0 || n.Runtime == nil || n.Runtime.ImageFs == nil ||
		u64(n.Runtime.ImageFs.UsedBytes) == 0 || u64(n.Runtime.ImageFs.CapacityBytes) == 0 {
		t.Errorf("node fs %+v runtime %+v", n.Fs, n.Runtime)
	}
	if n.Network == nil || len(n.Network.Interfaces) == 0 || n.Rlimit == nil {
		t.Errorf("node network %+v rlimit %+v", n.Network, n.Rlimit)
	}
	ps := findPod(t, s, pod.Name)
	if len(ps.Containers) != 1 {
		t.Fatalf("containers %+v", ps.Containers)
	}
	c := ps.Containers[0]
	t.Logf("container cpu %d ns, working set %d, rootfs %d, logs %d", u64(c.CPU.UsageCoreNanoSeconds),
		u64(c.Memory.WorkingSetBytes), u64(c.Rootfs.UsedBytes), u64(c.Logs.UsedBytes))
	if u64(c.CPU.UsageCoreNanoSeconds) == 0 || c.CPU.UsageNanoCores == nil || u64(c.Memory.WorkingSetBytes) == 0 {
		t.Errorf("container cpu %+v memory %+v", c.CPU, c.Memory)
	}
	if c.Rootfs == nil || c.Logs == nil || u64(c.Logs.UsedBytes) == 0 {
		t.Errorf("container rootfs %+v logs %+v", c.Rootfs, c.Logs)
	}
	if ps.Network == nil || ps.Network.Name != "eth0" {
		t.Errorf("pod network %+v, want eth0 from the sandbox's namespace", ps.Network)
	}
	if len(ps.VolumeStats) != 1 || u64(ps.VolumeStats[0].UsedBytes) < 64<<10 {
		t.Errorf("volumes %+v, want the 64KiB blob", ps.VolumeStats)
	}
	if ps.EphemeralStorage == nil || u64(ps.EphemeralStorage.UsedBytes) < 64<<10 {
		t.Errorf("ephemeral storage %+v", ps.EphemeralStorage)
	}

	// /metrics/resource over the same provider.
	rec := httptest.NewRecorder()
	metrics.NewResourceHandler(p).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics/resource", nil))
	var parser expfmt.TextParser
	families, err := parser.TextToMetricFamilies(rec.Body)
	if err != nil {
		t.Fatalf("/metrics/resource: %v", err)
	}
	found := false
	for _, m := range families["container_cpu_usage_seconds_total"].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "pod" && l.GetValue() == pod.Name && m.GetCounter().GetValue() > 0 {
				found = true
			}
		}
	}
	if !found || families["node_memory_working_set_bytes"] == nil {
		t.Errorf("/metrics/resource lacks the pod's container or the node: %v", families)
	}
}

// TestRealSummaryCostAt50Pods measures Summary() with 50 running pods. It reports the median
// and asserts nothing about time.
func TestRealSummaryCostAt50Pods(t *testing.T) {
	e := newRealEnv(t)
	const pods = 50
	start := time.Now()
	var wg sync.WaitGroup
	sem := make(chan struct{}, 4)
	for range pods {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			e.start("cost", "echo hi; sleep 3600")
		}()
	}
	wg.Wait()
	t.Logf("started %d pods in %v", pods, time.Since(start).Round(time.Second))
	p := e.provider()
	ctx := context.Background()
	s, err := p.Summary(ctx) // warm-up: learns the sandbox pids
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Pods) != pods {
		t.Fatalf("summary has %d pods, want %d", len(s.Pods), pods)
	}
	t.Logf("/stats/summary at %d pods: median %v", pods, median(t, 20, func() error { _, err := p.Summary(ctx); return err }))
	t.Logf("only_cpu_and_memory at %d pods: median %v", pods, median(t, 20, func() error { _, err := p.CPUAndMemorySummary(ctx); return err }))
	all, _ := e.cri.ListContainerStats(ctx)
	t.Logf("of which CRI ListContainerStats (%d containers on the runtime): median %v", len(all),
		median(t, 20, func() error { _, err := e.cri.ListContainerStats(ctx); return err }))
}

func median(t *testing.T, n int, f func() error) time.Duration {
	var times []time.Duration
	for range n {
		start := time.Now()
		if err := f(); err != nil {
			t.Fatal(err)
		}
		times = append(times, time.Since(start))
	}
	sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
	return times[n/2]
}

// waitForSize waits until path holds at least size bytes.
func waitForSize(t *testing.T, path string, size int64) {
	t.Helper()
	testutil.WaitUntil(t, time.Minute, fmt.Sprintf("%s to reach %d bytes", path, size), func() bool {
		fi, err := os.Stat(path)
		return err == nil && fi.Size() >= size
	})
}
