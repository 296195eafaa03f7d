package metrics

import (
	"context"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
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

// CRIUnaryInterceptor records kubelet_runtime_operations_* for every unary CRI call made on a
// connection dialled with grpc.WithChainUnaryInterceptor(metrics.CRIUnaryInterceptor).
func CRIUnaryInterceptor(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	start := time.Now()
	err := invoker(ctx, method, req, reply, cc, opts...)
	ObserveRuntimeOp(CRIOperation(method), time.Since(start), err)
	return err
}

var operationNames sync.Map // gRPC method → operation label

// CRIOperation names a CRI method ("/runtime.v1.RuntimeService/RunPodSandbox") as the
// kubelet's operation_type label does ("run_podsandbox"): snake case, with "PodSandbox" as one
// word.
func CRIOperation(method string) string {
	if v, ok := operationNames.Load(method); ok {
		return v.(string)
	}
	name := method[strings.LastIndex(method, "/")+1:]
	op := "update_container" // upstream's name for UpdateContainerResources
	if name != "UpdateContainerResources" {
		op = snakeCase(strings.ReplaceAll(name, "PodSandbox", "Podsandbox"))
	}
	operationNames.Store(method, op)
	return op
}

func snakeCase(s string) string {
	var b strings.Builder
	for i, r := range s {
		if unicode.IsUpper(r) {
			if i > 0 {
				b.WriteByte('_')
			}
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}
