package metrics

import (
	"net/http"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/procfs"
)

// The health-check SLIs of /metrics/slis, as component-base serves them for every Kubernetes
// component: on a registry of their own, so a scrape of them is small.

// HealthzType is the type label of the checks behind /healthz.
const HealthzType = "healthz"

var (
	healthcheck = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "kubernetes_healthcheck", Help: stable("This metric records the result of a single healthcheck."),
	}, []string{"name", "type"})
	healthchecksTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kubernetes_healthchecks_total", Help: stable("This metric records the results of all healthcheck."),
	}, []string{"name", "type", "status"})
	processStart = prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "process_start_time_seconds", Help: alpha("Start time of the process since unix epoch in seconds."),
	}, processStartTime)
)

var (
	sliRegistry = prometheus.NewRegistry()
	sliOnce     sync.Once
)

// ObserveHealthcheck records one run of the named check of type kind (HealthzType): the
// gauge says whether it passed last, the counter counts passes and failures.
func ObserveHealthcheck(name, kind string, passed bool) {
	status, value := "error", 0.0
	if passed {
		status, value = "success", 1
	}
	healthcheck.WithLabelValues(name, kind).Set(value)
	healthchecksTotal.WithLabelValues(name, kind, status).Inc()
}

// SLIHandler serves /metrics/slis. A DELETE clears the SLIs, as upstream's handler allows.
func SLIHandler() http.Handler {
	sliOnce.Do(func() { sliRegistry.MustRegister(healthcheck, healthchecksTotal, processStart) })
	serve := promhttp.HandlerFor(sliRegistry, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodDelete {
			healthcheck.Reset()
			healthchecksTotal.Reset()
			_, _ = w.Write([]byte("metrics reset\n"))
			return
		}
		serve.ServeHTTP(w, r)
	})
}

// processStartTime is the process's start time in Unix seconds, 0 when /proc cannot say.
func processStartTime() float64 {
	self, err := procfs.Self()
	if err != nil {
		return 0
	}
	stat, err := self.Stat()
	if err != nil {
		return 0
	}
	start, err := stat.StartTime()
	if err != nil {
		return 0
	}
	return start
}
