package cri

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/nodelet/nodelet/internal/runtime/container"
)

// taskExitEnvelope encodes containerd's Envelope carrying a TaskExit, as containerd 1.6 sends it.
func taskExitEnvelope(containerID, processID string) []byte {
	var exit []byte
	exit = protowire.AppendString(protowire.AppendTag(exit, 1, protowire.BytesType), containerID)
	exit = protowire.AppendString(protowire.AppendTag(exit, 2, protowire.BytesType), processID)
	exit = protowire.AppendVarint(protowire.AppendTag(exit, 4, protowire.VarintType), 1) // exit_status
	var anyMsg []byte
	anyMsg = protowire.AppendString(protowire.AppendTag(anyMsg, 1, protowire.BytesType), "containerd.events.TaskExit")
	anyMsg = protowire.AppendBytes(protowire.AppendTag(anyMsg, 2, protowire.BytesType), exit)
	var env []byte
	env = protowire.AppendString(protowire.AppendTag(env, 2, protowire.BytesType), "k8s.io")
	env = protowire.AppendString(protowire.AppendTag(env, 3, protowire.BytesType), "/tasks/exit")
	return protowire.AppendBytes(protowire.AppendTag(env, 4, protowire.BytesType), anyMsg)
}

// fakeContainerd answers every method through one handler: CRI events are unimplemented (as in
// containerd 1.6) and, when events is set, Subscribe sends them and records the filter.
type fakeContainerd struct {
	events  [][]byte
	filters chan string
}

func (f *fakeContainerd) handle(_ any, stream grpc.ServerStream) error {
	method, _ := grpc.MethodFromServerStream(stream)
	if method != subscribeMethod || f.events == nil {
		return status.Error(codes.Unimplemented, "unknown method "+method)
	}
	var req []byte
	if err := stream.RecvMsg(&req); err != nil {
		return err
	}
	filter, _ := bytesField(req, 1)
	f.filters <- string(filter)
	for _, ev := range f.events {
		if err := stream.SendMsg(&ev); err != nil {
			return err
		}
	}
	<-stream.Context().Done()
	return nil
}

func startFakeContainerd(t *testing.T, f *fakeContainerd) *Client {
	t.Helper()
	dir, err := os.MkdirTemp("", "fakectd")
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "c.sock")
	lis, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(grpc.UnknownServiceHandler(f.handle), grpc.ForceServerCodec(bytesCodec{}))
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(func() { srv.Stop(); os.RemoveAll(dir) })
	c, err := Connect("unix://"+sock, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestWatchExitsFallsBackToContainerdTaskExits(t *testing.T) {
	f := &fakeContainerd{filters: make(chan string, 1), events: [][]byte{
		taskExitEnvelope("c1", "exec-42"), // an exec'd process: the container still runs
		taskExitEnvelope("c2", "c2"),
	}}
	m := startFakeContainerd(t, f)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	exited := make(chan string, 4)
	done := make(chan error, 1)
	go func() { done <- m.WatchExits(ctx, func(id string) { exited <- id }) }()
	if got := <-f.filters; got != exitFilter {
		t.Fatalf("subscribed with filter %q, want %q", got, exitFilter)
	}
	select {
	case id := <-exited:
		if id != "c2" {
			t.Fatalf("first exit reported for %q, want c2 (exec exits are not container exits)", id)
		}
	case err := <-done:
		t.Fatalf("watch ended before any exit: %v", err)
	}
	cancel()
	if err := <-done; status.Code(err) != codes.Canceled {
		t.Fatalf("watch ended with %v, want Canceled", err)
	}
	if len(exited) != 0 {
		t.Fatalf("unexpected extra exit %q", <-exited)
	}
}

func TestWatchExitsWithoutEventStreams(t *testing.T) {
	m := startFakeContainerd(t, &fakeContainerd{})
	err := m.WatchExits(context.Background(), func(string) { t.Error("no exit can be reported") })
	if !errors.Is(err, container.ErrNoExitEvents) {
		t.Fatalf("got %v, want ErrNoExitEvents", err)
	}
}

func TestDecodeTaskExitRejectsGarbage(t *testing.T) {
	if _, _, err := decodeTaskExit([]byte{0x22, 0x05, 0x01}); err == nil {
		t.Fatal("a truncated envelope decoded without error")
	}
}
