package prober

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
)

// grpcProbe calls grpc.health.v1.Health/Check for service over plaintext: SERVING passes,
// any other answer or no answer in time fails.
func grpcProbe(ctx context.Context, addr, service string, timeout time.Duration) outcome {
	conn, err := grpc.NewClient("passthrough:///"+addr,
		grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithUserAgent(UserAgent))
	if err != nil {
		return outcome{res: failure, output: fmt.Sprintf("error: failed to connect service at %q: %v", addr, err)}
	}
	defer conn.Close()
	resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: service})
	if err != nil {
		switch status.Code(err) {
		case codes.Unimplemented:
			return outcome{res: failure, output: fmt.Sprintf("error: this server does not implement the grpc health protocol (grpc.health.v1.Health): %s", status.Convert(err).Message())}
		case codes.DeadlineExceeded:
			return outcome{res: failure, output: fmt.Sprintf("timeout: health rpc did not complete within %v", timeout)}
		}
		return outcome{res: failure, output: fmt.Sprintf("error: health rpc probe failed: %v", err)}
	}
	if resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		return outcome{res: failure, output: fmt.Sprintf("service unhealthy (responded with %q)", resp.GetStatus().String())}
	}
	return outcome{res: success}
}
