package metrics

import (
	"crypto/tls"
	"math"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Kinds of the node's certificates, for the certificate manager series.
const (
	CertClient  = "client"
	CertServing = "serving"
)

// rotationBuckets are upstream's buckets of how long a serving certificate lived before it was
// rotated: ten minutes to four years, in seconds.
var rotationBuckets = []float64{600, 1800, 3600, 14400, 86400, 604800, 2592000, 7776000, 15552000, 31104000, 124416000}

var (
	clientRenewErrors = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "kubelet_certificate_manager_client_expiration_renew_errors", Help: alpha("Counter of certificate renewal errors."),
	})
	servingRenewErrors = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "kubelet_server_expiration_renew_errors", Help: alpha("Counter of certificate renewal errors."),
	})
	servingRotationAge = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "kubelet_certificate_manager_server_rotation_seconds",
		Help:    alpha("Histogram of the number of seconds the previous certificate lived before being rotated."),
		Buckets: rotationBuckets,
	})
)

// CertRenewFailed counts a failed renewal of the client or serving certificate.
func CertRenewFailed(kind string) {
	if kind == CertServing {
		servingRenewErrors.Inc()
		return
	}
	clientRenewErrors.Inc()
}

// CertRotated records that the serving certificate issued at notBefore was replaced now.
func CertRotated(kind string, notBefore time.Time) {
	if kind == CertServing && !notBefore.IsZero() {
		servingRotationAge.Observe(time.Since(notBefore).Seconds())
	}
}

// certTTL reports, at each scrape, the seconds (whole) until the current certificate expires,
// +Inf while there is none, as upstream; nothing until a source is set, since upstream
// registers the gauge only when that certificate is managed.
type certTTL struct {
	desc    *prometheus.Desc
	mu      sync.Mutex
	current func() *tls.Certificate
}

var (
	clientTTL = &certTTL{desc: prometheus.NewDesc("kubelet_certificate_manager_client_ttl_seconds",
		alpha("Gauge of the TTL (time-to-live) of the Kubelet's client certificate. The value is in seconds until certificate expiry (negative if already expired). If client certificate is invalid or unused, the value will be +INF."), nil, nil)}
	servingTTL = &certTTL{desc: prometheus.NewDesc("kubelet_certificate_manager_server_ttl_seconds",
		alpha("Gauge of the shortest TTL (time-to-live) of the Kubelet's serving certificate. The value is in seconds until certificate expiry (negative if already expired). If serving certificate is invalid or unused, the value will be +INF."), nil, nil)}
)

func (c *certTTL) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *certTTL) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	current := c.current
	c.mu.Unlock()
	if current == nil {
		return
	}
	ttl := math.Inf(1)
	if cert := current(); cert != nil && cert.Leaf != nil {
		ttl = math.Trunc(time.Until(cert.Leaf.NotAfter).Seconds())
	}
	ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, ttl)
}

// WatchCertificate publishes the TTL of the client or serving certificate (kind) that
// current returns: the rotating client certificate, the CSR-issued serving one.
func WatchCertificate(kind string, current func() *tls.Certificate) {
	c := clientTTL
	if kind == CertServing {
		c = servingTTL
	}
	c.mu.Lock()
	c.current = current
	c.mu.Unlock()
}
