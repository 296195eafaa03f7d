// Package podresources serves the kubelet's pod-resources API (v1, and v1alpha1 as upstream) on a unix socket in the root
// directory: monitoring agents (GPU exporters, NUMA-aware schedulers' node agents, SR-IOV tooling)
// ask it which devices, exclusive CPUs and NUMA memory each container holds, and what the node has
// to give. It reads what it reports from the resource managers through small interfaces of its own.
package podresources

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/klog/v2"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"
	"k8s.io/kubelet/pkg/apis/podresources/v1alpha1"
	"k8s.io/utils/cpuset"

	"github.com/nodelet/nodelet/internal/lib/unixsock"
)

const (
	// DirName is the socket's directory under the root directory, as upstream.
	DirName = "pod-resources"
	// SocketName is the socket's name in DirName, as upstream.
	SocketName = "kubelet.sock"
	// DefaultQPS and DefaultBurst are upstream's rate limit for the whole service: no known
	// consumer needs more than 100 requests a second.
	DefaultQPS   = 100
	DefaultBurst = 10
)

// errRateLimited is what a request over the rate limit gets, code and text as upstream.
var errRateLimited = status.Error(codes.ResourceExhausted, "rejected by rate limit")

// Pods are the pods the node runs, as its pod manager holds them (mirror pods excluded).
type Pods interface {
	Pods() []*v1.Pod
	GetByName(namespace, name string) (*v1.Pod, bool)
}

// CPUs is the CPU manager's reading side.
type CPUs interface {
	// ContainerCPUs are the CPUs the container holds exclusively (empty when it runs on the
	// shared pool).
	ContainerCPUs(podUID types.UID, container string) cpuset.CPUSet
	// AllocatableCPUs are the CPUs the manager can give out exclusively.
	AllocatableCPUs() cpuset.CPUSet
}

// Memory is the memory manager's reading side.
type Memory interface {
	ContainerMemory(podUID types.UID, container string) []*podresourcesv1.ContainerMemory
	AllocatableMemory() []*podresourcesv1.ContainerMemory
}

// Devices is the device plugin manager's reading side.
type Devices interface {
	ContainerDevices(podUID types.UID, container string) []*podresourcesv1.ContainerDevices
	AllocatableDevices() []*podresourcesv1.ContainerDevices
}

// DynamicResources is the DRA manager's reading side: the prepared claims a container uses.
type DynamicResources interface {
	ContainerDynamicResources(pod *v1.Pod, c *v1.Container) []*podresourcesv1.DynamicResource
}

// Options configure a Server. A nil CPUs, Memory or Devices reports none of that resource, as
// upstream does when that manager is off.
type Options struct {
	// Socket is the unix socket to serve: <root-dir>/pod-resources/kubelet.sock.
	Socket  string
	Pods    Pods
	CPUs    CPUs
	Memory  Memory
	Devices Devices
	// DynamicResources, when set (the KubeletPodResourcesDynamicResources gate with DRA on),
	// lists the containers' prepared ResourceClaims.
	DynamicResources DynamicResources
	// PodsSynced reports whether Pods holds every pod the pod sources had when nodelet started.
	// List and Get wait for it (within the request's deadline), so a client asking right after
	// a restart is not told the node runs no pods. Nil: Pods is always complete.
	PodsSynced func() bool
	// GetEnabled is upstream's KubeletPodResourcesGet feature gate: without it Get refuses.
	GetEnabled bool
	// Limiter bounds the requests the whole service answers; nil: DefaultQPS with DefaultBurst.
	Limiter flowcontrol.PassiveRateLimiter
}

// Server serves the pod-resources API. The zero value is not usable; call New.
type Server struct {
	opts Options

	mu       sync.Mutex
	server   *grpc.Server
	listener net.Listener
}

// New returns a Server; Listen opens its socket.
func New(opts Options) (*Server, error) {
	if opts.Socket == "" || opts.Pods == nil {
		return nil, errors.New("podresources: Socket and Pods are required")
	}
	if opts.Limiter == nil {
		opts.Limiter = flowcontrol.NewTokenBucketPassiveRateLimiter(DefaultQPS, DefaultBurst)
	}
	registerMetrics(opts.GetEnabled)
	return &Server{opts: opts}, nil
}

// Listen creates the socket's directory and replaces a stale socket, so a failure shows at
// start; Run serves it.
func (s *Server) Listen() error {
	lis, err := listen(s.opts.Socket)
	if err != nil {
		return fmt.Errorf("pod resources socket: %w", err)
	}
	srv := grpc.NewServer(grpc.UnaryInterceptor(limit(s.opts.Limiter)))
	podresourcesv1.RegisterPodResourcesListerServer(srv, &lister{opts: s.opts})
	v1alpha1.RegisterPodResourcesListerServer(srv, &alphaLister{opts: s.opts})
	s.mu.Lock()
	s.server, s.listener = srv, lis
	s.mu.Unlock()
	return nil
}

// Run serves Listen's socket until ctx ends, then stops the server and removes the socket.
func (s *Server) Run(ctx context.Context) error {
	s.mu.Lock()
	srv, lis := s.server, s.listener
	s.mu.Unlock()
	if srv == nil {
		return errors.New("pod resources server is not listening")
	}
	klog.InfoS("Serving the pod resources API", "socket", s.opts.Socket, "getEnabled", s.opts.GetEnabled)
	if err := unixsock.ServeGRPC(ctx, srv, lis); err != nil {
		return fmt.Errorf("serving the pod resources API: %w", err)
	}
	if err := os.Remove(s.opts.Socket); err != nil && !errors.Is(err, os.ErrNotExist) {
		klog.ErrorS(err, "Removing the pod resources socket")
	}
	return nil
}

// listen opens a unix socket at path. The socket is bound under a temporary name and renamed
// into place, so a client never finds a path that is not yet listening (as upstream).
func listen(path string) (net.Listener, error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, err
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("removing the stale socket: %w", err)
	}
	tmp := filepath.Join(dir, ".new.sock") // short: a unix socket path holds at most 107 bytes
	if err := os.Remove(tmp); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	lis, err := unixsock.Listen(tmp)
	if err != nil {
		return nil, err
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = lis.Close()
		return nil, err
	}
	return lis, nil
}

// limit refuses every request over the limiter's rate, with upstream's error.
func limit(l flowcontrol.PassiveRateLimiter) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if !l.TryAccept() {
			return nil, errRateLimited
		}
		return handler(ctx, req)
	}
}
