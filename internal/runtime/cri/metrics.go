package cri

import (
	"context"
	"strings"
	"sync"
	"time"
	"unicode"

	"google.golang.org/grpc"

	"github.com/nodelet/nodelet/internal/lib/metrics"
)

// observeCalls records kubelet_runtime_operations_* for every unary call on a connection
// dial makes.
func observeCalls(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	start := time.Now()
	err := invoker(ctx, method, req, reply, cc, opts...)
	metrics.ObserveRuntimeOp(operationName(method), time.Since(start), err)
	return err
}

var operationNames sync.Map // gRPC method → operation label

// operationName names a CRI method ("/runtime.v1.RuntimeService/RunPodSandbox") as the
// kubelet's operation_type label does ("run_podsandbox"): snake case, with "PodSandbox" as one
// word.
func operationName(method string) string {
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
