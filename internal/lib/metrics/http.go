package metrics

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

var httpLabels = []string{"method", "path", "server_type", "long_running"}

var (
	httpRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kubelet_http_requests_total", Help: alpha("Number of the http requests received since the server started"),
	}, httpLabels)
	httpRequestsDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "kubelet_http_requests_duration_seconds", Help: alpha("Duration in seconds to serve http requests"),
		Buckets: prometheus.DefBuckets,
	}, httpLabels)
	httpInflight = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "kubelet_http_inflight_requests", Help: alpha("Number of the inflight http requests"),
	}, httpLabels)
)

// Server types for InstrumentHTTP.
const (
	ServerReadWrite = "readwrite"
	ServerReadOnly  = "readonly"
)

// pathBuckets are the first path segments counted under their own name; any other path is
// "other", so that the label stays bounded whatever clients ask for.
var pathBuckets = map[string]bool{
	"": true, "pods": true, "runningpods": true, "stats": true, "spec": true, "logs": true, "containerLogs": true,
	"healthz": true, "configz": true, "debug": true, "exec": true, "attach": true, "portForward": true, "run": true,
	"checkpoint": true, "cri": true, "metrics": true, "metrics/cadvisor": true, "metrics/probes": true,
	"metrics/resource": true, "metrics/slis": true,
}

var methodBuckets = map[string]bool{
	"GET": true, "HEAD": true, "POST": true, "PUT": true, "DELETE": true, "OPTIONS": true, "TRACE": true, "CONNECT": true,
}

// longRunning paths stream for as long as the client wants. They are matched lower-cased, so
// /portForward counts as long-running too.
var longRunning = map[string]bool{"exec": true, "attach": true, "portforward": true, "debug": true}

// InstrumentHTTP wraps the kubelet API handler so that every request counts in
// kubelet_http_requests_total, kubelet_http_requests_duration_seconds and
// kubelet_http_inflight_requests. serverType is ServerReadWrite or ServerReadOnly.
func InstrumentHTTP(serverType string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		path := pathBucket(r.URL.Path)
		method := r.Method
		if !methodBuckets[method] {
			method = "other"
		}
		labels := []string{method, path, serverType, strconv.FormatBool(longRunning[strings.ToLower(path)])}
		httpRequests.WithLabelValues(labels...).Inc()
		inflight := httpInflight.WithLabelValues(labels...)
		inflight.Inc()
		start := time.Now()
		defer func() {
			inflight.Dec()
			httpRequestsDuration.WithLabelValues(labels...).Observe(time.Since(start).Seconds())
		}()
		next.ServeHTTP(w, r)
	})
}

// pathBucket is the request's first path segment ("stats" for /stats/summary), or the first
// two under /metrics ("metrics/resource").
func pathBucket(path string) string {
	parts := strings.SplitN(strings.TrimPrefix(path, "/"), "/", 3)
	root := parts[0]
	if root == "metrics" && len(parts) > 1 && parts[1] != "" {
		root += "/" + parts[1]
	}
	if pathBuckets[root] {
		return root
	}
	return "other"
}
