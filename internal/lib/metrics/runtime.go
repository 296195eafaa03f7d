package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

var (
	runtimeOps = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kubelet_runtime_operations_total", Help: alpha("Cumulative number of runtime operations by operation type."),
	}, []string{"operation_type"})
	runtimeOpsDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "kubelet_runtime_operations_duration_seconds", Help: alpha("Duration in seconds of runtime operations. Broken down by operation type."),
		Buckets: prometheus.ExponentialBuckets(.005, 2.5, 14),
	}, []string{"operation_type"})
	runtimeOpsErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kubelet_runtime_operations_errors_total", Help: alpha("Cumulative number of runtime operation errors by operation type."),
	}, []string{"operation_type"})
)

// ObserveRuntimeOp records one CRI operation (e.g. "run_podsandbox") that took d and ended
// with err.
func ObserveRuntimeOp(operation string, d time.Duration, err error) {
	runtimeOps.WithLabelValues(operation).Inc()
	runtimeOpsDuration.WithLabelValues(operation).Observe(d.Seconds())
	if err != nil {
		runtimeOpsErrors.WithLabelValues(operation).Inc()
	}
}
