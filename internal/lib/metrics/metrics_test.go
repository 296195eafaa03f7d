package metrics

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestMetricsEndpointHasKubeletNames(t *testing.T) {
	SetNodeName("node-1")
	ObservePodWorker(PodWorkerSync, time.Now())
	ObservePodWorkerStart(time.Millisecond)
	ObservePLEGRelist(time.Millisecond)
	ObserveRuntimeOp("version", time.Millisecond, errors.New("x"))
	StartedPod()
	StartPodFailed()
	StartedContainer(ContainerTypeInit)
	StartContainerFailed(ContainerTypeContainer, "Unknown")
	RestartedPod(true)
	Evicted("memory.available")
	SetRuntimeCounter(func() RuntimeCounts {
		return RuntimeCounts{RunningPods: 3, Containers: map[string]int{"running": 4, "exited": 1}}
	})
	defer SetRuntimeCounter(nil)
	tracker := NewPodStartTracker(nil)
	tracker.PodObserved("u")
	tracker.PodRunning(&v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "u", CreationTimestamp: metav1.Now()}})
	InstrumentHTTP(ServerReadWrite, http.NotFoundHandler()).ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/pods", nil))

	families := scrape(t, Handler())
	for _, name := range []string{
		"kubelet_node_name", "kubelet_pod_worker_duration_seconds", "kubelet_pod_worker_start_duration_seconds",
		"kubelet_pod_start_duration_seconds", "kubelet_pod_start_sli_duration_seconds",
		"kubelet_pleg_relist_duration_seconds", "kubelet_pleg_last_seen_seconds",
		"kubelet_running_pods", "kubelet_running_containers", "kubelet_runtime_operations_total",
		"kubelet_runtime_operations_duration_seconds", "kubelet_runtime_operations_errors_total",
		"kubelet_started_pods_total", "kubelet_started_pods_errors_total", "kubelet_started_containers_total",
		"kubelet_started_containers_errors_total", "kubelet_restarted_pods_total", "kubelet_evictions",
		"kubelet_http_requests_total", "kubelet_http_requests_duration_seconds", "kubelet_http_inflight_requests",
		"go_goroutines", "process_resident_memory_bytes",
	} {
		if _, ok := families[name]; !ok {
			t.Errorf("%s missing from /metrics", name)
		}
	}
	if v := findMetric(t, families, "kubelet_node_name", map[string]string{"node": "node-1"}).GetGauge().GetValue(); v != 1 {
		t.Errorf("kubelet_node_name = %v", v)
	}
	if v := findMetric(t, families, "kubelet_running_containers", map[string]string{"container_state": "running"}).GetGauge().GetValue(); v != 4 {
		t.Errorf("running containers = %v", v)
	}
	if h := families["kubelet_runtime_operations_duration_seconds"].GetMetric()[0].GetHistogram(); len(h.GetBucket()) != 15 || h.GetBucket()[0].GetUpperBound() != 0.005 {
		t.Errorf("runtime op buckets %v, want 14 exponential from 5ms and +Inf", h.GetBucket())
	}
	if h := families["kubelet_pod_start_sli_duration_seconds"].GetMetric()[0].GetHistogram(); len(h.GetBucket()) != 26 || h.GetSampleCount() == 0 {
		t.Errorf("pod start SLI histogram %v", h)
	}
	if help := families["kubelet_pleg_relist_duration_seconds"].GetHelp(); !strings.HasPrefix(help, "[ALPHA] ") {
		t.Errorf("help %q lacks the stability level", help)
	}
}

func TestInstrumentHTTPLabels(t *testing.T) {
	h := InstrumentHTTP(ServerReadOnly, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if v := value(httpInflight.WithLabelValues("GET", "exec", ServerReadOnly, "true")); v != 1 && r.URL.Path == "/exec/a/b/c" {
			t.Errorf("inflight during the request = %v", v)
		}
	}))
	cases := []struct {
		method, path string
		labels       []string
	}{
		{"GET", "/stats/summary", []string{"GET", "stats", ServerReadOnly, "false"}},
		{"GET", "/metrics/resource", []string{"GET", "metrics/resource", ServerReadOnly, "false"}},
		{"GET", "/metrics", []string{"GET", "metrics", ServerReadOnly, "false"}},
		{"GET", "/exec/a/b/c", []string{"GET", "exec", ServerReadOnly, "true"}},
		{"POST", "/portForward/ns/pod", []string{"POST", "portForward", ServerReadOnly, "true"}},
		{"PATCH", "/random/thing", []string{"other", "other", ServerReadOnly, "false"}},
	}
	for _, c := range cases {
		before := value(httpRequests.WithLabelValues(c.labels...))
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(c.method, c.path, nil))
		if got := value(httpRequests.WithLabelValues(c.labels...)); got != before+1 {
			t.Errorf("%s %s: requests{%v} = %v, want %v", c.method, c.path, c.labels, got, before+1)
		}
		if v := value(httpInflight.WithLabelValues(c.labels...)); v != 0 {
			t.Errorf("%s %s: inflight %v after the request", c.method, c.path, v)
		}
	}
}

func TestPodStartTracker(t *testing.T) {
	now := time.Unix(1000, 0)
	tr := NewPodStartTracker(func() time.Time { return now })
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "p1", CreationTimestamp: metav1.NewTime(now.Add(time.Second))}}
	adopted := &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "p2", CreationTimestamp: metav1.NewTime(now.Add(-time.Hour))}}
	now = now.Add(3 * time.Second) // seen 2s after creation
	tr.PodObserved(pod.UID)
	tr.PodObserved(adopted.UID)
	tr.ImagePullStarted(pod.UID)
	now = now.Add(10 * time.Second)
	tr.ImagePullFinished(pod.UID)
	now = now.Add(time.Second)
	sli, start := histogramOf(podStartSLIDuration), histogramOf(podStartDuration)
	tr.PodRunning(pod)
	tr.PodRunning(pod) // once only
	tr.PodRunning(adopted)
	gotSLI, gotStart := histogramOf(podStartSLIDuration), histogramOf(podStartDuration)
	// Created at +1s, running at +14s, 10s pulling: SLI 3s. Seen at +3s: start 11s.
	if gotSLI.GetSampleCount()-sli.GetSampleCount() != 1 || !near(gotSLI.GetSampleSum()-sli.GetSampleSum(), 3) {
		t.Errorf("SLI samples %d sum %v", gotSLI.GetSampleCount()-sli.GetSampleCount(), gotSLI.GetSampleSum()-sli.GetSampleSum())
	}
	if gotStart.GetSampleCount()-start.GetSampleCount() != 2 || !near(gotStart.GetSampleSum()-start.GetSampleSum(), 22) {
		t.Errorf("start samples %d sum %v, want 2 pods of 11s", gotStart.GetSampleCount()-start.GetSampleCount(), gotStart.GetSampleSum()-start.GetSampleSum())
	}
}

func histogramOf(h interface{ Write(*dto.Metric) error }) *dto.Histogram {
	var m dto.Metric
	_ = h.Write(&m)
	return m.GetHistogram()
}

// value reads a counter's or gauge's current value.
func value(c interface{ Write(*dto.Metric) error }) float64 {
	var m dto.Metric
	_ = c.Write(&m)
	if m.Counter != nil {
		return m.GetCounter().GetValue()
	}
	return m.GetGauge().GetValue()
}

func TestObservePodStatusAndContainerType(t *testing.T) {
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{UID: "obs-1", CreationTimestamp: metav1.NewTime(time.Now().Add(time.Hour))},
		Spec: v1.PodSpec{
			InitContainers: []v1.Container{{Name: "init"}},
			Containers:     []v1.Container{{Name: "a"}, {Name: "b"}},
		},
	}
	PodObserved(pod.UID)
	before := histogramOf(podStartDuration).GetSampleCount()
	running := v1.ContainerStatus{State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}
	waiting := v1.ContainerStatus{State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{}}}
	ObservePodStatus(pod, &v1.PodStatus{Phase: v1.PodRunning, ContainerStatuses: []v1.ContainerStatus{running, waiting}})
	if histogramOf(podStartDuration).GetSampleCount() != before {
		t.Fatal("recorded before every container ran")
	}
	ObservePodStatus(pod, &v1.PodStatus{Phase: v1.PodRunning, ContainerStatuses: []v1.ContainerStatus{running, running}})
	if histogramOf(podStartDuration).GetSampleCount() != before+1 {
		t.Fatal("not recorded once every container ran")
	}
	ForgetPod(pod.UID)
	for name, want := range map[string]string{"init": ContainerTypeInit, "a": ContainerTypeContainer} {
		if got := ContainerType(pod, name); got != want {
			t.Errorf("ContainerType(%s) = %s", name, got)
		}
	}
}

// near compares sums of a process-wide histogram, whose float additions are not exact.
func near(a, b float64) bool { return a-b < 1e-6 && b-a < 1e-6 }

func TestRunPodSandboxByHandler(t *testing.T) {
	before := value(runPodSandboxErrors.WithLabelValues("test-handler"))
	RanPodSandbox("test-handler", 2*time.Second, true)
	RanPodSandbox("test-handler", time.Second, false)
	if got := value(runPodSandboxErrors.WithLabelValues("test-handler")); got != before+1 {
		t.Errorf("errors %v, want %v", got, before+1)
	}
	var m dto.Metric
	if err := runPodSandboxDuration.WithLabelValues("test-handler").(prometheus.Histogram).Write(&m); err != nil {
		t.Fatal(err)
	}
	if m.GetHistogram().GetSampleCount() < 2 || m.GetHistogram().GetSampleSum() < 3 {
		t.Errorf("histogram %v", m.GetHistogram())
	}
}
