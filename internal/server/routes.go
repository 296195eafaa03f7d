package server

import (
	"net/http"

	v1 "k8s.io/api/core/v1"
)

// debugDisabledPaths answer 405 when debugging handlers are off, as upstream, so callers learn
// why rather than get a 404.
var debugDisabledPaths = []string{
	"/run/", "/exec/", "/attach/", "/portForward/", "/containerLogs/", "/runningpods/", "/debug/pprof/", "/logs/", "/debug/pods/",
}

// secureMux is the routing of the HTTPS port; every request has passed authentication and
// authorization before it gets here.
func (s *Server) secureMux(h Handlers) *http.ServeMux {
	mux := http.NewServeMux()
	s.commonRoutes(mux, h)
	mount(mux, h.StatsSummary, "POST /stats/summary")
	// The node page shows what /pods does, so it is served (and authorized) like /pods, not
	// as a debugging handler; it stays off the unauthenticated read-only port.
	mount(mux, h.NodeUI, "/ui", "/ui/")
	if !s.opts.EnableDebuggingHandlers {
		for _, p := range debugDisabledPaths {
			mux.Handle(p, disabledHandler("Debug endpoints are disabled."))
		}
		return mux
	}
	mount(mux, h.ContainerLogs, "GET /containerLogs/{namespace}/{pod}/{container}")
	for _, verb := range []string{"GET ", "POST "} {
		mount(mux, h.Exec, verb+"/exec/{namespace}/{pod}/{container}", verb+"/exec/{namespace}/{pod}/{uid}/{container}")
		mount(mux, h.Attach, verb+"/attach/{namespace}/{pod}/{container}", verb+"/attach/{namespace}/{pod}/{uid}/{container}")
		mount(mux, h.PortForward, verb+"/portForward/{namespace}/{pod}", verb+"/portForward/{namespace}/{pod}/{uid}")
	}
	mount(mux, h.Run, "POST /run/{namespace}/{pod}/{container}", "POST /run/{namespace}/{pod}/{uid}/{container}")
	mount(mux, h.Checkpoint, "POST /checkpoint/{namespace}/{pod}/{container}")
	if s.opts.RunningPods != nil {
		list := func(r *http.Request) ([]*v1.Pod, error) { return s.opts.RunningPods(r.Context()) }
		mount(mux, podListHandler(list), "GET /runningpods", "GET /runningpods/{$}")
	}
	mux.Handle("/configz", configzHandler(s.opts.Config))
	mount(mux, h.PodTimeline, "GET /debug/pods/{namespace}/{name}/timeline")

	if s.opts.EnableSystemLogHandler {
		mount(mux, h.NodeLogs, "GET /logs/")
	} else {
		mux.Handle("/logs/", disabledHandler("logs endpoint is disabled."))
	}
	if s.opts.EnableProfilingHandler {
		mux.Handle("GET /debug/pprof/", pprofHandler())
	} else {
		mux.Handle("/debug/pprof/", disabledHandler("profiling endpoint is disabled."))
	}
	if s.opts.EnableDebugFlagsHandler {
		mux.Handle("/debug/flags/v", verbosityHandler())
	} else {
		mux.Handle("/debug/flags/v", disabledHandler("flags endpoint is disabled."))
	}
	return mux
}

// readOnlyMux is the routing of the read-only port: health, pods, stats and metrics. The
// debugging paths answer 405 there, as upstream.
func (s *Server) readOnlyMux(h Handlers) *http.ServeMux {
	mux := http.NewServeMux()
	s.commonRoutes(mux, h)
	for _, p := range debugDisabledPaths {
		mux.Handle(p, disabledHandler("Debug endpoints are disabled."))
	}
	return mux
}

// commonRoutes are served on both ports.
func (s *Server) commonRoutes(mux *http.ServeMux, h Handlers) {
	health := healthHandler(s.opts.HealthChecks)
	mux.Handle("/healthz", health)
	mux.Handle("/healthz/{check}", health)
	if s.opts.Pods != nil {
		list := func(*http.Request) ([]*v1.Pod, error) { return s.opts.Pods(), nil }
		mount(mux, podListHandler(list), "GET /pods", "GET /pods/{$}")
	}
	mount(mux, h.StatsSummary, "GET /stats/summary")
	mount(mux, h.Metrics, "/metrics")
	mount(mux, h.MetricsResource, "/metrics/resource")
	mount(mux, h.MetricsProbes, "/metrics/probes")
	mount(mux, h.MetricsCadvisor, "/metrics/cadvisor")
	mount(mux, h.MetricsSLIs, "/metrics/slis")
}

// mount registers handler under each pattern; a nil handler is not served.
func mount(mux *http.ServeMux, handler http.Handler, patterns ...string) {
	if handler == nil {
		return
	}
	for _, p := range patterns {
		mux.Handle(p, handler)
	}
}
