package cri

import (
	"fmt"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// MaxMsgSize is the largest CRI message accepted; list responses on busy nodes are big.
const MaxMsgSize = 16 << 20

// dial returns a connection to a unix-socket CRI endpoint such as
// "unix:///run/nodelet/containerd/containerd.sock" (a bare absolute path also works). The
// connection is made lazily by the first call.
func dial(endpoint string) (*grpc.ClientConn, error) {
	target := endpoint
	switch {
	case strings.HasPrefix(target, "/"):
		target = "unix://" + target
	case !strings.HasPrefix(target, "unix:"):
		return nil, fmt.Errorf("CRI endpoint %q: only unix sockets are supported", endpoint)
	}
	conn, err := grpc.NewClient(target,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithChainUnaryInterceptor(observeCalls),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(MaxMsgSize), grpc.MaxCallSendMsgSize(MaxMsgSize)),
	)
	if err != nil {
		return nil, fmt.Errorf("dial CRI endpoint %q: %w", endpoint, err)
	}
	return conn, nil
}
