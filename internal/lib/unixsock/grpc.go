package unixsock

import (
	"context"
	"net"

	"google.golang.org/grpc"
)

// ServeGRPC serves srv on lis until ctx ends, then stops srv (closing its connections) and
// waits for it. It returns early with Serve's error when serving fails, or nil when srv was
// stopped by someone else.
func ServeGRPC(ctx context.Context, srv *grpc.Server, lis net.Listener) error {
	served := make(chan error, 1)
	go func() { served <- srv.Serve(lis) }()
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	srv.Stop()
	<-served
	return nil
}
