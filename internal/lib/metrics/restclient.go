package metrics

import (
	"context"
	"math"
	"net/url"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	clientmetrics "k8s.io/client-go/tools/metrics"
)

// The client-go series (rest_client_*) under component-base's names, label sets and buckets,
// fed through client-go's metrics hooks: every API request nodelet makes is counted.

var (
	restLatencyBuckets = []float64{0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0}
	restSizeBuckets    = []float64{64, 256, 512, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216}
)

var (
	restRequestLatency     = verbHostHistogram("rest_client_request_duration_seconds", "Request latency in seconds. Broken down by verb, and host.", restLatencyBuckets)
	restRequestSize        = verbHostHistogram("rest_client_request_size_bytes", "Request size in bytes. Broken down by verb and host.", restSizeBuckets)
	restResponseSize       = verbHostHistogram("rest_client_response_size_bytes", "Response size in bytes. Broken down by verb and host.", restSizeBuckets)
	restRateLimiterLatency = verbHostHistogram("rest_client_rate_limiter_duration_seconds", "Client side rate limiter latency in seconds. Broken down by verb, and host.", restLatencyBuckets)
	restRequestResult      = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "rest_client_requests_total", Help: alpha("Number of HTTP requests, partitioned by status code, method, and host."),
	}, []string{"code", "method", "host"})
	restRequestRetries = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "rest_client_request_retries_total", Help: alpha("Number of request retries, partitioned by status code, verb, and host."),
	}, []string{"code", "verb", "host"})
	restExecCertTTL = prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "rest_client_exec_plugin_ttl_seconds",
		Help: alpha("Gauge of the shortest TTL (time-to-live) of the client certificate(s) managed by the auth exec plugin. The value is in seconds until certificate expiry (negative if already expired). If auth exec plugins are unused or manage no TLS certificates, the value will be +INF."),
	}, execCertExpiry.ttl)
)

// verbHostHistogram is a client-go histogram labelled by verb and host.
func verbHostHistogram(name, help string, buckets []float64) *prometheus.HistogramVec {
	return prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: alpha(help), Buckets: buckets}, []string{"verb", "host"})
}

var registerClientOnce sync.Once

// RegisterClientMetrics hooks the rest_client_* series into client-go. client-go takes only
// the first registration of a process, so call it before any client is built.
func RegisterClientMetrics() {
	registerClientOnce.Do(func() {
		clientmetrics.Register(clientmetrics.RegisterOpts{
			ClientCertExpiry:   &execCertExpiry,
			RequestLatency:     latencyObserver{restRequestLatency},
			RequestSize:        sizeObserver{restRequestSize},
			ResponseSize:       sizeObserver{restResponseSize},
			RateLimiterLatency: latencyObserver{restRateLimiterLatency},
			RequestResult:      resultCounter{restRequestResult},
			RequestRetry:       retryCounter{restRequestRetries},
		})
	})
}

type latencyObserver struct{ h *prometheus.HistogramVec }

func (o latencyObserver) Observe(_ context.Context, verb string, u url.URL, d time.Duration) {
	o.h.WithLabelValues(verb, u.Host).Observe(d.Seconds())
}

type sizeObserver struct{ h *prometheus.HistogramVec }

func (o sizeObserver) Observe(_ context.Context, verb, host string, size float64) {
	o.h.WithLabelValues(verb, host).Observe(size)
}

type resultCounter struct{ c *prometheus.CounterVec }

func (r resultCounter) Increment(_ context.Context, code, method, host string) {
	r.c.WithLabelValues(code, method, host).Inc()
}

type retryCounter struct{ c *prometheus.CounterVec }

func (r retryCounter) IncrementRetry(_ context.Context, code, verb, host string) {
	r.c.WithLabelValues(code, verb, host).Inc()
}

// certExpiry holds the expiry of an exec plugin's client certificate; +Inf TTL without one.
type certExpiry struct {
	mu     sync.Mutex
	expiry *time.Time
}

var execCertExpiry certExpiry

func (e *certExpiry) Set(expiry *time.Time) {
	e.mu.Lock()
	e.expiry = expiry
	e.mu.Unlock()
}

func (e *certExpiry) ttl() float64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.expiry == nil {
		return math.Inf(1)
	}
	return time.Until(*e.expiry).Seconds()
}
