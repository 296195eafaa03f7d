package metrics

import (
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Probe types and results as prober_probe_total labels them.
const (
	ProbeLiveness  = "Liveness"
	ProbeReadiness = "Readiness"
	ProbeStartup   = "Startup"

	ProbeSuccessful = "successful"
	ProbeFailed     = "failed"
	ProbeUnknown    = "unknown"
)

var (
	proberResults = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "prober_probe_total",
		Help: beta("Cumulative number of a liveness, readiness or startup probe for a container by result."),
	}, []string{"probe_type", "result", "container", "pod", "namespace", "pod_uid"})
	proberDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "prober_probe_duration_seconds", Help: alpha("Duration in seconds for a probe response."),
		Buckets: prometheus.DefBuckets,
	}, []string{"probe_type", "container", "pod", "namespace"})

	probeRegistry     = prometheus.NewRegistry()
	probeRegisterOnce sync.Once
)

// ProbesHandler serves /metrics/probes; with no probe recorded yet it serves an empty,
// valid exposition.
func ProbesHandler() http.Handler {
	probeRegisterOnce.Do(func() { probeRegistry.MustRegister(proberResults, proberDuration) })
	return promhttp.HandlerFor(probeRegistry, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}

// RecordProbe counts one probe run; probeType is a Probe{Liveness,Readiness,Startup}
// constant and result a Probe{Successful,Failed,Unknown} one.
func RecordProbe(probeType, result, container, pod, namespace, podUID string) {
	proberResults.WithLabelValues(probeType, result, container, pod, namespace, podUID).Inc()
}

// ObserveProbeDuration records how long a probe took to answer.
func ObserveProbeDuration(probeType, container, pod, namespace string, d time.Duration) {
	proberDuration.WithLabelValues(probeType, container, pod, namespace).Observe(d.Seconds())
}

// ForgetProbes drops a pod's probe series once the pod is gone, so they do not pile up.
func ForgetProbes(pod, namespace string) {
	proberResults.DeletePartialMatch(prometheus.Labels{"pod": pod, "namespace": namespace})
	proberDuration.DeletePartialMatch(prometheus.Labels{"pod": pod, "namespace": namespace})
}
