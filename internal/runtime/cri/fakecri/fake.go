// Package fakecri is an in-memory CRI runtime and image service served over real gRPC on a
// unix socket, for tests of code that talks CRI. It models sandbox and container lifecycles
// (ready/notready sandboxes with IPs, created→running→exited containers with timestamps) and
// an image store whose pulls can be made to fail.
package fakecri

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"
)

// Sandbox is a snapshot of one fake pod sandbox.
type Sandbox struct {
	ID        string
	Config    *runtimeapi.PodSandboxConfig
	State     runtimeapi.PodSandboxState
	CreatedAt time.Time
	IP        string // empty for host-network sandboxes
	HostNet   bool
	Handler   string // the RuntimeHandler it was run with
}

// Container is a snapshot of one fake container.
type Container struct {
	ID          string
	SandboxID   string
	Config      *runtimeapi.ContainerConfig
	State       runtimeapi.ContainerState
	CreatedAt   time.Time
	StartedAt   time.Time
	FinishedAt  time.Time
	ExitCode    int32
	Reason      string
	ImageRef    string
	LogPath     string // absolute: sandbox log directory joined with the container log path
	StopTimeout int64  // timeout of the last StopContainer call, -1 when never stopped
}

// Exec is one recorded ExecSync call.
type Exec struct {
	ContainerID string
	Cmd         []string
	Timeout     int64
}

// ExecHandler answers ExecSync calls.
type ExecHandler func(containerID string, cmd []string) (stdout []byte, exitCode int32, err error)

// Fake is the in-memory runtime. All methods are safe for concurrent use.
type Fake struct {
	runtimeapi.UnimplementedRuntimeServiceServer
	runtimeapi.UnimplementedImageServiceServer

	mu          sync.Mutex
	clock       clock.PassiveClock
	sandboxes   map[string]*Sandbox
	containers  map[string]*Container
	images      map[string]*runtimeapi.Image // by ID
	pullErrors  map[string]error
	failNext    map[string][]error
	holds       map[string]chan struct{} // methods whose calls wait until released
	conditions  map[string]bool
	calls       []string
	execs       []Exec
	execHandler ExecHandler
	// stopIgnoresTerm has StopContainer take its whole timeout, as a container that traps
	// SIGTERM does until the runtime's SIGKILL.
	stopIgnoresTerm bool
	nextID          int
	nextIP          int
	lastTime        time.Time
	handlers        map[string]bool // the runtime handlers configured besides the default ("")

	// reported holds the handlers and features Status reports (SetFeatures).
	reported *runtimeapi.StatusResponse
	// cgroupDriver is what RuntimeConfig reports; nil answers Unimplemented.
	cgroupDriver *runtimeapi.CgroupDriver
	pulls        []*runtimeapi.PullImageRequest
	version      *[2]string // runtime name and version Version reports (SetVersion)
}

// New returns an empty fake that is not served; most tests want Start.
func New() *Fake {
	return &Fake{
		clock:      clock.RealClock{},
		sandboxes:  map[string]*Sandbox{},
		containers: map[string]*Container{},
		images:     map[string]*runtimeapi.Image{},
		pullErrors: map[string]error{},
		failNext:   map[string][]error{},
		holds:      map[string]chan struct{}{},
		conditions: map[string]bool{runtimeapi.RuntimeReady: true, runtimeapi.NetworkReady: true},
		nextIP:     2,
		handlers:   map[string]bool{},
	}
}

// AddHandlers configures runtime handlers; a sandbox asking for another fails as
// containerd's does.
func (f *Fake) AddHandlers(names ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, n := range names {
		f.handlers[n] = true
	}
}

// Start serves a new fake on a unix socket in a temp dir until the test ends. It returns the
// fake and its endpoint ("unix:///.../cri.sock").
func Start(t testing.TB) (*Fake, string) {
	t.Helper()
	f := New()
	// Unix socket paths are limited to ~108 bytes; t.TempDir can be longer.
	dir, err := os.MkdirTemp("", "fakecri")
	if err != nil {
		t.Fatalf("fakecri: %v", err)
	}
	sock := filepath.Join(dir, "cri.sock")
	lis, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatalf("fakecri: listen: %v", err)
	}
	srv := grpc.NewServer(grpc.UnaryInterceptor(f.intercept))
	runtimeapi.RegisterRuntimeServiceServer(srv, f)
	runtimeapi.RegisterImageServiceServer(srv, f)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(func() {
		srv.Stop()
		os.RemoveAll(dir)
	})
	return f, "unix://" + sock
}

// intercept records every call and returns injected errors.
func (f *Fake) intercept(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	method := info.FullMethod[strings.LastIndex(info.FullMethod, "/")+1:]
	f.mu.Lock()
	f.calls = append(f.calls, method)
	var injected error
	if errs := f.failNext[method]; len(errs) > 0 {
		injected, f.failNext[method] = errs[0], errs[1:]
	}
	hold := f.holds[method]
	f.mu.Unlock()
	if hold != nil {
		select {
		case <-hold:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if injected != nil {
		return nil, injected
	}
	return handler(ctx, req)
}

// Hold makes calls of method wait (after being recorded) until release is called, so a test
// can see what else happens while such a call is in progress.
func (f *Fake) Hold(method string) (release func()) {
	ch := make(chan struct{})
	f.mu.Lock()
	f.holds[method] = ch
	f.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			f.mu.Lock()
			delete(f.holds, method)
			f.mu.Unlock()
			close(ch)
		})
	}
}

// SetClock sets the clock used for timestamps (e.g. a k8s.io/utils/clock/testing FakeClock).
func (f *Fake) SetClock(c clock.PassiveClock) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.clock = c
}

// Calls returns the CRI method names called so far, in order.
func (f *Fake) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

// CountCalls returns how many times method was called.
func (f *Fake) CountCalls(method string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, c := range f.calls {
		if c == method {
			n++
		}
	}
	return n
}

// ResetCalls forgets the recorded calls.
func (f *Fake) ResetCalls() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = nil
}

// FailNext makes the next call of method (e.g. "StartContainer") fail with err. Repeated
// calls queue more failures.
func (f *Fake) FailNext(method string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failNext[method] = append(f.failNext[method], err)
}

// SetCondition sets a runtime condition (runtimeapi.RuntimeReady, runtimeapi.NetworkReady).
func (f *Fake) SetCondition(condType string, ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.conditions[condType] = ok
}

// SetStopIgnoresTerm has every StopContainer take its whole timeout before the container exits.
func (f *Fake) SetStopIgnoresTerm(on bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stopIgnoresTerm = on
}

// SetExecHandler replaces the ExecSync behaviour (default: exit 0, no output).
func (f *Fake) SetExecHandler(h ExecHandler) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.execHandler = h
}

// Execs returns the recorded ExecSync calls.
func (f *Fake) Execs() []Exec {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Exec(nil), f.execs...)
}

// Sandboxes returns snapshots of all sandboxes, oldest first.
func (f *Fake) Sandboxes() []Sandbox {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]Sandbox, 0, len(f.sandboxes))
	for _, s := range f.sandboxes {
		c := *s
		c.Config = cloneSandboxConfig(s.Config)
		out = append(out, c)
	}
	sortByCreation(out, func(s Sandbox) (time.Time, string) { return s.CreatedAt, s.ID })
	return out
}

// Containers returns snapshots of all containers, oldest first.
func (f *Fake) Containers() []Container {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]Container, 0, len(f.containers))
	for _, c := range f.containers {
		cp := *c
		cp.Config = cloneContainerConfig(c.Config)
		out = append(out, cp)
	}
	sortByCreation(out, func(c Container) (time.Time, string) { return c.CreatedAt, c.ID })
	return out
}

// Container returns a snapshot of one container.
func (f *Fake) Container(id string) (Container, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.containers[id]
	if !ok {
		return Container{}, false
	}
	cp := *c
	cp.Config = cloneContainerConfig(c.Config)
	return cp, true
}

// ExitContainer makes a running container exit with code, as if its process ended.
func (f *Fake) ExitContainer(id string, code int32) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.containers[id]
	if !ok {
		return fmt.Errorf("container %q not found", id)
	}
	if c.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
		return fmt.Errorf("container %q is not running", id)
	}
	f.exitLocked(c, code)
	return nil
}

// StopSandbox marks a sandbox not ready and ends its containers, as if it died.
func (f *Fake) StopSandbox(id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	s, ok := f.sandboxes[id]
	if !ok {
		return fmt.Errorf("sandbox %q not found", id)
	}
	f.stopSandboxLocked(s)
	return nil
}

func (f *Fake) exitLocked(c *Container, code int32) {
	c.State = runtimeapi.ContainerState_CONTAINER_EXITED
	c.FinishedAt = f.now()
	c.ExitCode = code
	c.Reason = "Completed"
	if code != 0 {
		c.Reason = "Error"
	}
}

func (f *Fake) stopSandboxLocked(s *Sandbox) {
	for _, c := range f.containers {
		if c.SandboxID == s.ID && c.State == runtimeapi.ContainerState_CONTAINER_RUNNING {
			f.exitLocked(c, 137)
		}
	}
	s.State = runtimeapi.PodSandboxState_SANDBOX_NOTREADY
}

// now returns the clock's time, nudged forward so that timestamps are strictly increasing even
// under a fake clock (the order of events stays visible in creation times).
func (f *Fake) now() time.Time {
	t := f.clock.Now()
	if !t.After(f.lastTime) {
		t = f.lastTime.Add(time.Nanosecond)
	}
	f.lastTime = t
	return t
}

func (f *Fake) newID(prefix string) string {
	f.nextID++
	return fmt.Sprintf("%s%06d", prefix, f.nextID)
}

func notFound(kind, id string) error {
	return status.Errorf(codes.NotFound, "%s %q not found", kind, id)
}

// RelabelContainer replaces a container's labels and annotations, as if another kubelet (the
// upstream one, or an older nodelet) had created it with its own.
func (f *Fake) RelabelContainer(id string, labels, annotations map[string]string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.containers[id]
	if !ok {
		return fmt.Errorf("container %q not found", id)
	}
	c.Config.Labels, c.Config.Annotations = labels, annotations
	return nil
}
