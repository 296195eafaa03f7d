// Package streaming serves the kubelet API's interactive endpoints: exec, attach,
// port-forward and run. For exec, attach and port-forward it resolves the pod and container,
// asks the CRI runtime for a URL on the runtime's own streaming server, and proxies the
// client's upgraded (SPDY or WebSocket) connection there byte for byte, as the upstream
// kubelet does; the runtime speaks the streaming protocols. Run executes a command
// synchronously and returns its output.
package streaming

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"google.golang.org/grpc/codes"
	grpcstatus "google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/internal/runtime/container"
	"github.com/nodelet/nodelet/internal/runtime/cri"
)

// PodLookup finds desired pods; *pod.Manager implements it.
type PodLookup interface {
	GetByName(namespace, name string) (*v1.Pod, bool)
	// MirrorOf returns a static pod's mirror, whose UID clients may know it by.
	MirrorOf(static *v1.Pod) (*v1.Pod, bool)
}

// PodStatusFunc reads a pod's runtime state (kuberuntime.Manager.GetPodStatus).
type PodStatusFunc func(ctx context.Context, uid types.UID, name, namespace string) (*container.PodStatus, error)

// Deps are what the handlers need.
type Deps struct {
	Pods      PodLookup
	PodStatus PodStatusFunc
	Runtime   cri.Streamer
	// Transport dials the runtime's streaming server; nil dials it directly with a 30s
	// connect timeout. Only its dialer (and TLS config, for https URLs) is used.
	Transport http.RoundTripper
}

// Handlers are the endpoints, one per server.Handlers field of the same name.
type Handlers struct {
	Exec        http.Handler // /exec/{namespace}/{pod}[/{uid}]/{container}
	Attach      http.Handler // /attach/{namespace}/{pod}[/{uid}]/{container}
	PortForward http.Handler // /portForward/{namespace}/{pod}[/{uid}]
	Run         http.Handler // /run/{namespace}/{pod}[/{uid}]/{container}
}

// server holds the dependencies the handlers share.
type server struct {
	pods      PodLookup
	podStatus PodStatusFunc
	runtime   cri.Streamer
	transport http.RoundTripper
}

// New returns the streaming handlers. They read the path values namespace, pod, uid
// (optional) and container, as the kubelet server's patterns name them.
func New(d Deps) *Handlers {
	s := &server{pods: d.Pods, podStatus: d.PodStatus, runtime: d.Runtime, transport: d.Transport}
	if s.transport == nil {
		s.transport = &http.Transport{
			DialContext: (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		}
	}
	return &Handlers{
		Exec:        allowMethods(http.HandlerFunc(s.serveExec), http.MethodGet, http.MethodPost),
		Attach:      allowMethods(http.HandlerFunc(s.serveAttach), http.MethodGet, http.MethodPost),
		PortForward: allowMethods(http.HandlerFunc(s.servePortForward), http.MethodGet, http.MethodPost),
		Run:         allowMethods(http.HandlerFunc(s.serveRun), http.MethodPost),
	}
}

// allowMethods answers 405 to methods the upstream kubelet does not route.
func allowMethods(h http.Handler, methods ...string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for _, m := range methods {
			if r.Method == m {
				h.ServeHTTP(w, r)
				return
			}
		}
		for _, m := range methods {
			w.Header().Add("Allow", m)
		}
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	})
}

// statusError is an error with the HTTP status the client should get for it.
type statusError struct {
	code int
	msg  string
}

func (e *statusError) Error() string { return e.msg }

func errorf(code int, format string, args ...any) error {
	return &statusError{code: code, msg: fmt.Sprintf(format, args...)}
}

// writeError answers a request that failed before any upgrade. Runtime errors map as the
// upstream kubelet maps them: NotFound → 404, ResourceExhausted (too many pending streams) →
// 429, anything else → 500.
func writeError(w http.ResponseWriter, r *http.Request, err error) {
	code := http.StatusInternalServerError
	var se *statusError
	switch {
	case errors.As(err, &se):
		code = se.code
	case grpcstatus.Code(err) == codes.NotFound:
		code = http.StatusNotFound
	case grpcstatus.Code(err) == codes.ResourceExhausted:
		w.Header().Set("Retry-After", "60") // the runtime's pending-request cache TTL
		code = http.StatusTooManyRequests
	}
	klog.V(2).InfoS("Streaming request failed", "path", r.URL.Path, "status", code, "err", err)
	http.Error(w, err.Error(), code)
}

// lookupPod resolves the request's pod. A UID in the path must be the pod's, or its mirror
// pod's for a static pod.
func (s *server) lookupPod(r *http.Request) (*v1.Pod, error) {
	namespace, name, uid := r.PathValue("namespace"), r.PathValue("pod"), types.UID(r.PathValue("uid"))
	pod, ok := s.pods.GetByName(namespace, name)
	if !ok {
		return nil, errorf(http.StatusNotFound, "pod does not exist")
	}
	if uid != "" && uid != pod.UID {
		if mirror, ok := s.pods.MirrorOf(pod); !ok || mirror.UID != uid {
			return nil, errorf(http.StatusNotFound, "pod not found")
		}
	}
	return pod, nil
}

// runtimeStatus reads what the runtime holds for pod.
func (s *server) runtimeStatus(ctx context.Context, pod *v1.Pod) (*container.PodStatus, error) {
	status, err := s.podStatus(ctx, pod.UID, pod.Name, pod.Namespace)
	if err != nil {
		return nil, fmt.Errorf("reading the runtime state of pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return status, nil
}

// runningContainer returns the ID of the newest running instance of the named container.
func (s *server) runningContainer(ctx context.Context, pod *v1.Pod, name string) (string, error) {
	status, err := s.runtimeStatus(ctx, pod)
	if err != nil {
		return "", err
	}
	seen := false
	for _, c := range status.Containers { // newest first
		if c.Name != name {
			continue
		}
		if c.State == container.StateRunning {
			return c.ID, nil
		}
		seen = true
	}
	if seen {
		return "", errorf(http.StatusInternalServerError, "container %q in pod %s/%s is not running", name, pod.Namespace, pod.Name)
	}
	return "", errorf(http.StatusInternalServerError, "container not found (%q)", name)
}

// readySandbox returns the ID of the pod's newest ready sandbox.
func (s *server) readySandbox(ctx context.Context, pod *v1.Pod) (string, error) {
	status, err := s.runtimeStatus(ctx, pod)
	if err != nil {
		return "", err
	}
	for _, sb := range status.Sandboxes { // newest first
		if sb.Ready {
			return sb.ID, nil
		}
	}
	return "", errorf(http.StatusInternalServerError, "pod %s/%s has no running sandbox", pod.Namespace, pod.Name)
}
