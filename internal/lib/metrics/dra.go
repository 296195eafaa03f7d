package metrics

import (
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// draBuckets go up to 40s, under the 45s bound of one DRA driver call, as upstream's.
var draBuckets = prometheus.ExponentialBucketsRange(.1, 40, 15)

var (
	draOperationsDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "dra_operations_duration_seconds",
		Help: alpha("Latency histogram in seconds for the duration of handling all ResourceClaims referenced by a pod when " +
			"the pod starts or stops. Identified by the name of the operation (PrepareResources or UnprepareResources) and " +
			"separated by the success of the operation. The number of failed operations is provided through the histogram's overall count."),
		Buckets: draBuckets,
	}, []string{"operation_name", "is_error"})
	draGRPCDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "dra_grpc_operations_duration_seconds", Help: alpha("Duration in seconds of the DRA gRPC operations"), Buckets: draBuckets,
	}, []string{"driver_name", "method_name", "grpc_status_code"})
	draOnce sync.Once
)

// EnableDRA adds the DRA histograms to the registry, once: upstream serves them only with the
// DynamicResourceAllocation gate on.
func EnableDRA() {
	draOnce.Do(func() { Registry().MustRegister(draOperationsDuration, draGRPCDuration) })
}

// ObserveDRAOperation records one PrepareResources or UnprepareResources of a pod's claims.
func ObserveDRAOperation(operation string, failed bool, took time.Duration) {
	draOperationsDuration.WithLabelValues(operation, strconv.FormatBool(failed)).Observe(took.Seconds())
}

// ObserveDRACall records one call to a DRA driver with its gRPC status code ("OK", ...).
func ObserveDRACall(driver, method, code string, took time.Duration) {
	draGRPCDuration.WithLabelValues(driver, method, code).Observe(took.Seconds())
}
