// Package server serves the kubelet HTTP API: the authenticated, authorized HTTPS port (10250)
// and the optional unauthenticated read-only port (10255). Other packages provide the heavy
// handlers (logs, exec, stats, metrics) through Handlers; this package owns TLS, authentication,
// authorization, routing and the simple endpoints.
package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"
	"k8s.io/utils/ptr"

	"github.com/nodelet/nodelet/internal/lib/kubeclient"
	"github.com/nodelet/nodelet/internal/server/healthz"
)

// Options configure the servers. The zero value of a bool means off.
type Options struct {
	Address      string // kc.Address; empty or 0.0.0.0 / :: listens everywhere
	Port         int32  // kc.Port (10250)
	ReadOnlyPort int32  // kc.ReadOnlyPort; 0 = no read-only server

	TLSCertFile     string   // kc.TLSCertFile; with TLSKeyFile, the served pair
	TLSKeyFile      string   // kc.TLSPrivateKeyFile
	TLSMinVersion   string   // kc.TLSMinVersion ("" = VersionTLS12)
	TLSCipherSuites []string // kc.TLSCipherSuites (Go names; empty = Go's defaults)
	CertDir         string   // --cert-dir: where kubelet.crt/kubelet.key are kept when no pair is given
	// ReloadCertificateFiles serves the pair's files anew when they change (upstream's
	// ReloadKubeletServerCertificateFile gate); off, they are read once at start.
	ReloadCertificateFiles bool
	// ServingCertificate, when set, supplies the served pair at each handshake (serverTLSBootstrap:
	// issued through a CSR and rotated); nil until one is issued fails the handshake.
	ServingCertificate func() *tls.Certificate

	NodeName  string   // the Node the API serves; the authorization "name" and the cert CN
	HostIPs   []net.IP // extra IP SANs of the self-signed cert
	Hostnames []string // extra DNS SANs of the self-signed cert

	// Authentication (incl. X509.ClientCAFile) and Authorization as in the completed
	// KubeletConfiguration; an unset anonymous or webhook switch is off.
	Authentication kubeletconfigv1beta1.KubeletAuthentication
	Authorization  kubeletconfigv1beta1.KubeletAuthorization
	// StreamingVerbFromMethod authorizes exec, attach, port-forward and run with the HTTP
	// method's verb, as upstream (a WebSocket GET asks get); by default they ask create.
	StreamingVerbFromMethod bool

	EnableDebuggingHandlers bool // kc.EnableDebuggingHandlers: logs, exec, attach, port-forward, run, runningpods, configz, debug
	EnableSystemLogHandler  bool // kc.EnableSystemLogHandler: /logs/ (with debugging handlers)
	EnableProfilingHandler  bool // kc.EnableProfilingHandler: /debug/pprof/ (with debugging handlers)
	EnableDebugFlagsHandler bool // kc.EnableDebugFlagsHandler: PUT /debug/flags/v (with debugging handlers)

	// Client asks TokenReview and SubjectAccessReview; nil standalone, which allows neither
	// webhook authentication nor webhook authorization.
	Client kubeclient.Interface
	// Config is served on /configz.
	Config *kubeletconfigv1beta1.KubeletConfiguration

	// HealthChecks are the named checks of /healthz (e.g. syncloop, pleg).
	HealthChecks map[string]healthz.Check
	// Pods lists the pods this node runs, each with its current status (/pods).
	Pods func() []*v1.Pod
	// RunningPods lists what the runtime runs: names, UIDs and containers (/runningpods/).
	RunningPods func(ctx context.Context) ([]*v1.Pod, error)
}

// Handlers are the endpoints other packages serve. A nil handler is not served (404). Path
// values (r.PathValue) are namespace, pod, uid and container, as the patterns below name them.
type Handlers struct {
	ContainerLogs   http.Handler // GET /containerLogs/{namespace}/{pod}/{container}
	NodeLogs        http.Handler // GET /logs/ and below
	Exec            http.Handler // GET|POST /exec/{namespace}/{pod}[/{uid}]/{container}
	Attach          http.Handler // GET|POST /attach/{namespace}/{pod}[/{uid}]/{container}
	PortForward     http.Handler // GET|POST /portForward/{namespace}/{pod}[/{uid}]
	Run             http.Handler // POST /run/{namespace}/{pod}[/{uid}]/{container}
	StatsSummary    http.Handler // GET|POST /stats/summary
	Metrics         http.Handler // /metrics
	MetricsResource http.Handler // /metrics/resource
	MetricsProbes   http.Handler // /metrics/probes
	MetricsCadvisor http.Handler // /metrics/cadvisor
	MetricsSLIs     http.Handler // /metrics/slis
	Checkpoint      http.Handler // POST /checkpoint/{namespace}/{pod}/{container} (debugging handlers)
	PodTimeline     http.Handler // GET /debug/pods/{namespace}/{name}/timeline
	NodeUI          http.Handler // the node page: /ui and everything below it
}

// Server is the kubelet HTTP API, ready to Run.
type Server struct {
	opts     Options
	authn    *authenticator
	authz    authorizer
	tls      *tls.Config
	files    *servingPair // the served pair's files, reloaded while serving; nil otherwise
	secure   http.Handler
	readOnly http.Handler // nil: no read-only port
}

// New checks the options, loads (or creates) the serving certificate and builds both servers.
// As upstream, webhook authentication or authorization without an API client is an error.
func New(opts Options, h Handlers) (*Server, error) {
	s := &Server{opts: opts}
	hasClient := opts.Client != nil && !reflect.ValueOf(opts.Client).IsNil()

	var clientCAs *clientCA
	if file := opts.Authentication.X509.ClientCAFile; file != "" {
		var err error
		if clientCAs, err = newClientCA(file); err != nil {
			return nil, err
		}
	}
	s.authn = &authenticator{clientCAs: clientCAs, anonymous: ptr.Deref(opts.Authentication.Anonymous.Enabled, false)}
	if ptr.Deref(opts.Authentication.Webhook.Enabled, false) {
		if !hasClient {
			return nil, errors.New("authentication.webhook.enabled needs an API client (--kubeconfig); disable it or set --authentication-token-webhook=false")
		}
		s.authn.tokens = newTokenAuthenticator(opts.Client.AuthenticationV1().TokenReviews(),
			opts.Authentication.Webhook.CacheTTL.Duration, time.Now)
	}

	switch opts.Authorization.Mode {
	case kubeletconfigv1beta1.KubeletAuthorizationModeAlwaysAllow:
		s.authz = alwaysAllow{}
	case kubeletconfigv1beta1.KubeletAuthorizationModeWebhook:
		if !hasClient {
			return nil, errors.New("authorization mode Webhook needs an API client (--kubeconfig); use --authorization-mode=AlwaysAllow")
		}
		wh := opts.Authorization.Webhook
		s.authz = newWebhookAuthorizer(opts.Client.AuthorizationV1().SubjectAccessReviews(),
			wh.CacheAuthorizedTTL.Duration, wh.CacheUnauthorizedTTL.Duration, time.Now)
	case "":
		return nil, errors.New("no authorization mode specified")
	default:
		return nil, fmt.Errorf("unknown authorization mode %q", opts.Authorization.Mode)
	}

	cfg, files, err := servingTLSConfig(&opts, clientCAs)
	if err != nil {
		return nil, err
	}
	s.tls, s.files = cfg, files
	s.secure = withAccessLog("secure", s.withAuth(s.secureMux(h)))
	if opts.ReadOnlyPort > 0 {
		s.readOnly = withAccessLog("read-only", readOnly(s.readOnlyMux(h)))
	}
	return s, nil
}

// Run serves until ctx ends, then shuts down gracefully. It returns at once when a port cannot
// be listened on, and with the error of a server that stops by itself.
func (s *Server) Run(ctx context.Context) error {
	secureLn, err := net.Listen("tcp", hostPort(s.opts.Address, s.opts.Port))
	if err != nil {
		return fmt.Errorf("kubelet API: listening on port %d: %w", s.opts.Port, err)
	}
	var readOnlyLn net.Listener
	if s.readOnly != nil {
		if readOnlyLn, err = net.Listen("tcp", hostPort(s.opts.Address, s.opts.ReadOnlyPort)); err != nil {
			_ = secureLn.Close()
			return fmt.Errorf("kubelet read-only API: listening on port %d: %w", s.opts.ReadOnlyPort, err)
		}
	}
	return s.serve(ctx, secureLn, readOnlyLn)
}

// serve runs the servers on the given listeners (readOnlyLn may be nil).
func (s *Server) serve(ctx context.Context, secureLn, readOnlyLn net.Listener) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	secure := newHTTPServer(s.secure)
	secure.TLSConfig = s.tls.Clone()
	servers := []*http.Server{secure}
	errs := make(chan error, 2)
	go func() { errs <- secure.ServeTLS(secureLn, "", "") }()
	klog.InfoS("Serving the kubelet API", "address", secureLn.Addr().String())
	if readOnlyLn != nil {
		ro := newHTTPServer(s.readOnly)
		servers = append(servers, ro)
		go func() { errs <- ro.Serve(readOnlyLn) }()
		klog.InfoS("Serving the read-only kubelet API", "address", readOnlyLn.Addr().String())
	}

	var wg sync.WaitGroup
	if ca := s.authn.clientCAs; ca != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ca.run(ctx)
		}()
	}
	if s.files != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.files.run(ctx)
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		<-ctx.Done()
		// ctx has ended: the graceful shutdown gets a deadline of its own.
		shut, done := context.WithTimeout(context.Background(), shutdownTimeout)
		defer done()
		for _, srv := range servers {
			_ = srv.Shutdown(shut)
		}
	}()

	// Whichever server stops first stops the other; closing after Shutdown is no error.
	var first error
	for range servers {
		if err := <-errs; err != nil && !errorsIsClosed(err) && first == nil {
			first = err
		}
		cancel()
	}
	wg.Wait()
	return first
}

const shutdownTimeout = 5 * time.Second

// readHeaderTimeout bounds a request's TLS handshake and headers: a client that opens
// connections and never finishes them (slowloris) would otherwise hold each for ReadTimeout.
// Tests shorten it.
var readHeaderTimeout = 10 * time.Second

func newHTTPServer(h http.Handler) *http.Server {
	// Read and write timeouts as upstream: long enough for streaming and log follow. Headers
	// (and the TLS handshake, which net/http bounds by the shortest timeout) must come quickly.
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: readHeaderTimeout,
		IdleTimeout:       90 * time.Second,
		ReadTimeout:       4 * time.Hour,
		WriteTimeout:      4 * time.Hour,
		MaxHeaderBytes:    1 << 20,
		ErrorLog:          log.New(serverLogWriter{}, "", 0),
	}
}

// serverLogWriter sends net/http's own complaints (TLS handshake failures, ...) to klog V(2).
type serverLogWriter struct{}

func (serverLogWriter) Write(p []byte) (int, error) {
	klog.V(2).InfoS("HTTP server", "msg", strings.TrimSpace(string(p)))
	return len(p), nil
}

func hostPort(address string, port int32) string {
	return net.JoinHostPort(address, strconv.Itoa(int(port)))
}
