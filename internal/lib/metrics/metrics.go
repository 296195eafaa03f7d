// Package metrics holds nodelet's Prometheus metrics under the upstream kubelet's names, label
// sets and buckets, on a registry of its own (not the prometheus global one), and serves
// /metrics, /metrics/resource, /metrics/probes (/metrics/cadvisor is internal/server/cadvisor).
//
// Recording is through package functions so that a component needs one line to report; the
// package imports nothing of nodelet's, so any package (cri included) may use it.
package metrics

import (
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Values of the container_type label of kubelet_started_containers_total.
const (
	ContainerTypeContainer = "container"
	ContainerTypeInit      = "init_container"
	ContainerTypeEphemeral = "ephemeral_container"
)

// Values of the operation_type label of kubelet_pod_worker_duration_seconds.
const (
	PodWorkerCreate = "create"
	PodWorkerUpdate = "update"
	PodWorkerSync   = "sync"
	PodWorkerKill   = "kill"
)

// Help texts carry the stability level first, as Kubernetes components print them.
func alpha(help string) string  { return "[ALPHA] " + help }
func beta(help string) string   { return "[BETA] " + help }
func stable(help string) string { return "[STABLE] " + help }

// podStartupBuckets are upstream's hand-picked pod startup buckets, in seconds.
var podStartupBuckets = []float64{0.5, 1, 2, 3, 4, 5, 6, 8, 10, 20, 30, 45, 60, 120, 180, 240, 300, 360, 480, 600, 900, 1200, 1800, 2700, 3600}

var (
	nodeName = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "kubelet_node_name", Help: alpha("The node's name. The count is always 1."),
	}, []string{"node"})
	podWorkerDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "kubelet_pod_worker_duration_seconds",
		Help:    alpha("Duration in seconds to sync a single pod. Broken down by operation type: create, update, or sync"),
		Buckets: prometheus.DefBuckets,
	}, []string{"operation_type"})
	podWorkerStartDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "kubelet_pod_worker_start_duration_seconds", Help: alpha("Duration in seconds from kubelet seeing a pod to starting a worker."),
		Buckets: prometheus.DefBuckets,
	})
	podStartDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "kubelet_pod_start_duration_seconds",
		Help:    alpha("Duration in seconds from kubelet seeing a pod for the first time to the pod starting to run"),
		Buckets: podStartupBuckets,
	})
	podStartSLIDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "kubelet_pod_start_sli_duration_seconds",
		Help:    alpha("Duration in seconds to start a pod, excluding time to pull images and run init containers, measured from pod creation timestamp to when all its containers are reported as started and observed via watch"),
		Buckets: podStartupBuckets,
	})
	plegRelistDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "kubelet_pleg_relist_duration_seconds", Help: alpha("Duration in seconds for relisting pods in PLEG."),
		Buckets: prometheus.DefBuckets,
	})
	plegRelistInterval = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "kubelet_pleg_relist_interval_seconds", Help: alpha("Interval in seconds between relisting in PLEG."),
		Buckets: prometheus.DefBuckets,
	})
	plegLastSeen = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "kubelet_pleg_last_seen_seconds", Help: alpha("Timestamp in seconds when PLEG was last seen active."),
	})
	startedPods = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "kubelet_started_pods_total", Help: alpha("Cumulative number of pods started"),
	})
	startedPodsErrors = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "kubelet_started_pods_errors_total", Help: alpha("Cumulative number of errors when starting pods"),
	})
	runPodSandboxDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "kubelet_run_podsandbox_duration_seconds", Help: alpha("Seconds each RunPodSandbox call took, by the RuntimeClass handler it asked for."),
		Buckets: prometheus.DefBuckets,
	}, []string{"runtime_handler"})
	runPodSandboxErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kubelet_run_podsandbox_errors_total", Help: alpha("RunPodSandbox calls that failed, by the RuntimeClass handler they asked for."),
	}, []string{"runtime_handler"})
	startedContainers = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kubelet_started_containers_total", Help: alpha("Cumulative number of containers started"),
	}, []string{"container_type"})
	startedContainersErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kubelet_started_containers_errors_total", Help: alpha("Cumulative number of errors when starting containers"),
	}, []string{"container_type", "code"})
	restartedPods = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kubelet_restarted_pods_total",
		Help: alpha("Number of pods that have been restarted because they were deleted and recreated with the same UID while the kubelet was watching them (common for static pods, extremely uncommon for API pods)"),
	}, []string{"static"})
	evictions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kubelet_evictions", Help: alpha("Cumulative number of pod evictions by eviction signal"),
	}, []string{"eviction_signal"})
	// Upstream has no metric for its volume walks; this one is nodelet's own, hence the prefix.
	volumeStatsWalk = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "nodelet_volume_stats_walk_duration_seconds",
		Help:    "Duration in seconds of one directory walk measuring a pod's emptyDir volume for the stats summary; its count is the number of walks.",
		Buckets: prometheus.ExponentialBuckets(0.001, 4, 10),
	})
)

var (
	registry     = prometheus.NewRegistry()
	registerOnce sync.Once
)

func register() {
	registerOnce.Do(func() {
		registry.MustRegister(
			collectors.NewGoCollector(),
			collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
			nodeName, podWorkerDuration, podWorkerStartDuration, podStartDuration, podStartSLIDuration,
			plegRelistDuration, plegRelistInterval, plegLastSeen,
			startedPods, startedPodsErrors, runPodSandboxDuration, runPodSandboxErrors, startedContainers, startedContainersErrors, restartedPods, evictions, volumeStatsWalk,
			runtimeOps, runtimeOpsDuration, runtimeOpsErrors,
			httpRequests, httpRequestsDuration, httpInflight,
			runtimeCounter, claimVolumeStats,
			imagePullDuration, admissionRejections,
			clientRenewErrors, servingRenewErrors, servingRotationAge, clientTTL, servingTTL,
			restRequestLatency, restRequestSize, restResponseSize, restRateLimiterLatency, restRequestResult, restRequestRetries, restExecCertTTL,
		)
	})
}

// Registry returns nodelet's registry, for components that add collectors of their own.
func Registry() *prometheus.Registry {
	register()
	return registry
}

// Handler serves /metrics: the kubelet metrics plus Go runtime and process collectors.
func Handler() http.Handler {
	return promhttp.HandlerFor(Registry(), promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}

// SetNodeName publishes kubelet_node_name{node=name} 1.
func SetNodeName(name string) {
	nodeName.Reset()
	nodeName.WithLabelValues(name).Set(1)
}

// ObservePodWorker records one pod worker step that began at start; operation is one of the
// PodWorker* constants. Use as `defer metrics.ObservePodWorker(op, time.Now())`.
func ObservePodWorker(operation string, start time.Time) {
	podWorkerDuration.WithLabelValues(operation).Observe(time.Since(start).Seconds())
}

// ObservePodWorkerStart records the delay between a pod update and its worker starting.
func ObservePodWorkerStart(d time.Duration) { podWorkerStartDuration.Observe(d.Seconds()) }

var plegMu sync.Mutex
var plegLastStart time.Time

// ObservePLEGRelist records a relist that took d and has just ended: its duration, the
// interval since the previous relist began, and the time PLEG was last active. Its signature
// fits pleg.New's onRelist.
func ObservePLEGRelist(d time.Duration) {
	now := time.Now()
	start := now.Add(-d)
	plegMu.Lock()
	prev := plegLastStart
	plegLastStart = start
	plegMu.Unlock()
	plegRelistDuration.Observe(d.Seconds())
	if !prev.IsZero() {
		plegRelistInterval.Observe(start.Sub(prev).Seconds())
	}
	plegLastSeen.Set(float64(now.UnixNano()) / float64(time.Second))
}

// StartedPod counts a pod sandbox created; StartPodFailed one that failed.
func StartedPod()     { startedPods.Inc() }
func StartPodFailed() { startedPodsErrors.Inc() }

// RanPodSandbox records one RunPodSandbox call for the runtime handler (empty: the default).
func RanPodSandbox(handler string, took time.Duration, failed bool) {
	runPodSandboxDuration.WithLabelValues(handler).Observe(took.Seconds())
	if failed {
		runPodSandboxErrors.WithLabelValues(handler).Inc()
	}
}

// StartedContainer counts a container started; containerType is a ContainerType* constant.
func StartedContainer(containerType string) { startedContainers.WithLabelValues(containerType).Inc() }

// StartContainerFailed counts a container that failed to start; code is the error's short
// reason (upstream uses the gRPC code, e.g. "Unknown").
func StartContainerFailed(containerType, code string) {
	startedContainersErrors.WithLabelValues(containerType, code).Inc()
}

// RestartedPod counts a pod deleted and recreated with the same UID.
func RestartedPod(static bool) { restartedPods.WithLabelValues(strconv.FormatBool(static)).Inc() }

// ObserveVolumeStatsWalk records one walk measuring a volume that took d.
func ObserveVolumeStatsWalk(d time.Duration) { volumeStatsWalk.Observe(d.Seconds()) }

// Evicted counts a pod eviction for an eviction signal (e.g. "memory.available").
func Evicted(signal string) { evictions.WithLabelValues(signal).Inc() }
