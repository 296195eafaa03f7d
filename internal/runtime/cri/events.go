package cri

import (
	"context"
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodelet/nodelet/internal/runtime/container"
)

var _ container.ExitWatcher = (*Client)(nil)

// WatchExits prefers CRI GetContainerEvents (containerd ≥ 1.7) and falls back to containerd's
// own events service, which older containerd serves on the same socket.
func (c *Client) WatchExits(ctx context.Context, exited func(containerID string)) error {
	err := c.watchCRIEvents(ctx, exited)
	if status.Code(err) != codes.Unimplemented || c.conn == nil {
		return err
	}
	err = watchTaskExits(ctx, c.conn, exited)
	if status.Code(err) == codes.Unimplemented {
		return container.ErrNoExitEvents
	}
	return err
}

func (c *Client) watchCRIEvents(ctx context.Context, exited func(string)) error {
	stream, err := c.rt.GetContainerEvents(ctx, &runtimeapi.GetEventsRequest{})
	if err != nil {
		return err
	}
	for {
		ev, err := stream.Recv()
		if err != nil {
			return err
		}
		if ev.ContainerEventType == runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT {
			exited(ev.ContainerId)
		}
	}
}

// containerd's events service, spoken with a bytes codec and protowire so that nodelet need not
// link containerd's API module for two small messages.
const (
	subscribeMethod = "/containerd.services.events.v1.Events/Subscribe"
	// Only the k8s.io namespace's task exits: the CRI plugin's containers.
	exitFilter = `topic=="/tasks/exit",namespace=="k8s.io"`
)

func watchTaskExits(ctx context.Context, conn grpc.ClientConnInterface, exited func(string)) error {
	desc := &grpc.StreamDesc{ServerStreams: true}
	stream, err := conn.NewStream(ctx, desc, subscribeMethod, grpc.ForceCodec(bytesCodec{}))
	if err != nil {
		return err
	}
	// SubscribeRequest{repeated string filters = 1}
	req := protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), exitFilter)
	if err := stream.SendMsg(&req); err != nil {
		return err
	}
	if err := stream.CloseSend(); err != nil {
		return err
	}
	for {
		var envelope []byte
		if err := stream.RecvMsg(&envelope); err != nil {
			return err
		}
		containerID, processID, err := decodeTaskExit(envelope)
		if err != nil {
			return err
		}
		// An exec'd process exiting leaves its container running.
		if containerID != "" && processID == containerID {
			exited(containerID)
		}
	}
}

// decodeTaskExit reads Envelope{event = 4: Any{value = 2: TaskExit{container_id = 1, id = 2}}}.
func decodeTaskExit(envelope []byte) (containerID, processID string, err error) {
	anyMsg, err := bytesField(envelope, 4)
	if err != nil {
		return "", "", fmt.Errorf("containerd event envelope: %w", err)
	}
	exit, err := bytesField(anyMsg, 2)
	if err != nil {
		return "", "", fmt.Errorf("containerd event payload: %w", err)
	}
	cid, err := bytesField(exit, 1)
	if err != nil {
		return "", "", fmt.Errorf("containerd task exit: %w", err)
	}
	pid, err := bytesField(exit, 2)
	if err != nil {
		return "", "", fmt.Errorf("containerd task exit: %w", err)
	}
	return string(cid), string(pid), nil
}

// bytesField returns the last value of a length-delimited field, or nil if absent.
func bytesField(msg []byte, want protowire.Number) ([]byte, error) {
	var found []byte
	for len(msg) > 0 {
		num, typ, n := protowire.ConsumeTag(msg)
		if n < 0 {
			return nil, protowire.ParseError(n)
		}
		msg = msg[n:]
		if typ == protowire.BytesType && num == want {
			v, n := protowire.ConsumeBytes(msg)
			if n < 0 {
				return nil, protowire.ParseError(n)
			}
			found, msg = v, msg[n:]
			continue
		}
		n = protowire.ConsumeFieldValue(num, typ, msg)
		if n < 0 {
			return nil, protowire.ParseError(n)
		}
		msg = msg[n:]
	}
	return found, nil
}

// bytesCodec passes pre-encoded protobuf bytes through gRPC unchanged.
type bytesCodec struct{}

func (bytesCodec) Name() string { return "proto" }

func (bytesCodec) Marshal(v any) ([]byte, error) {
	b, ok := v.(*[]byte)
	if !ok {
		return nil, fmt.Errorf("bytesCodec: cannot marshal %T", v)
	}
	return *b, nil
}

func (bytesCodec) Unmarshal(data []byte, v any) error {
	b, ok := v.(*[]byte)
	if !ok {
		return fmt.Errorf("bytesCodec: cannot unmarshal into %T", v)
	}
	*b = append((*b)[:0], data...)
	return nil
}
