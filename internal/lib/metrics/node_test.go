package metrics

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

func TestImageSizeBucketAsUpstream(t *testing.T) {
	for size, want := range map[uint64]string{
		0: "N/A", 1: "0-10MB", 10 << 20: "0-10MB", 10<<20 + 1: "10MB-100MB", 500 << 20: "100MB-500MB",
		3 << 30: "1GB-5GB", 100 << 30: "60GB-100GB", 100<<30 + 1: "GT100GB",
	} {
		if got := ImageSizeBucket(size); got != want {
			t.Errorf("ImageSizeBucket(%d) = %q, want %q", size, got, want)
		}
	}
}

func TestImagePullAndAdmissionSeries(t *testing.T) {
	ImagePulled(5<<20, 12*time.Second)
	AdmissionRejected("OutOfcpu")
	AdmissionRejected("OutOfexample.com/gpu")
	AdmissionRejected("PodFieldNotSupported")
	families := scrape(t, Handler())
	h := findMetric(t, families, "kubelet_image_pull_duration_seconds", map[string]string{"image_size_in_bytes": "0-10MB"}).GetHistogram()
	if h.GetSampleCount() < 1 || h.GetBucket()[len(imagePullBuckets)-1].GetUpperBound() != 3600 || h.GetBucket()[0].GetUpperBound() != 1 {
		t.Errorf("image pull histogram = %v", h)
	}
	for _, reason := range []string{"OutOfcpu", "OutOfExtendedResources", "Other"} {
		if v := findMetric(t, families, "kubelet_admission_rejections_total", map[string]string{"reason": reason}).GetCounter().GetValue(); v < 1 {
			t.Errorf("kubelet_admission_rejections_total{reason=%q} = %v", reason, v)
		}
	}
}

func TestCertificateSeries(t *testing.T) {
	families := scrape(t, Handler())
	if _, ok := families["kubelet_certificate_manager_client_ttl_seconds"]; ok {
		t.Error("client TTL reported with no client certificate managed (upstream registers it only with rotation)")
	}
	var current *tls.Certificate
	WatchCertificate(CertServing, func() *tls.Certificate { return current })
	defer WatchCertificate(CertServing, nil)
	families = scrape(t, Handler())
	if v := findMetric(t, families, "kubelet_certificate_manager_server_ttl_seconds", nil).GetGauge().GetValue(); !math.IsInf(v, 1) {
		t.Errorf("TTL without a certificate = %v, want +Inf", v)
	}
	current = &tls.Certificate{Leaf: &x509.Certificate{NotAfter: time.Now().Add(time.Hour)}}
	families = scrape(t, Handler())
	if v := findMetric(t, families, "kubelet_certificate_manager_server_ttl_seconds", nil).GetGauge().GetValue(); v < 3590 || v > 3600 || v != math.Trunc(v) {
		t.Errorf("TTL = %v, want whole seconds near 3600", v)
	}
	CertRenewFailed(CertServing)
	CertRenewFailed(CertClient)
	CertRotated(CertServing, time.Now().Add(-2*time.Hour))
	families = scrape(t, Handler())
	for _, name := range []string{"kubelet_server_expiration_renew_errors", "kubelet_certificate_manager_client_expiration_renew_errors"} {
		if v := findMetric(t, families, name, nil).GetCounter().GetValue(); v < 1 {
			t.Errorf("%s = %v", name, v)
		}
	}
	if c := findMetric(t, families, "kubelet_certificate_manager_server_rotation_seconds", nil).GetHistogram().GetSampleCount(); c < 1 {
		t.Error("rotation age not observed")
	}
}

func TestRestClientSeriesCountAPIRequests(t *testing.T) {
	RegisterClientMetrics()
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if strings.HasSuffix(r.URL.Path, "/missing") {
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}`))
			return
		}
		_, _ = w.Write([]byte(`{"kind":"Node","apiVersion":"v1","metadata":{"name":"n1"}}`))
	}))
	defer api.Close()
	client := kubernetes.NewForConfigOrDie(&rest.Config{Host: api.URL})
	_, _ = client.CoreV1().Nodes().Get(context.Background(), "n1", metav1.GetOptions{})
	_, _ = client.CoreV1().Nodes().Get(context.Background(), "missing", metav1.GetOptions{})

	host := strings.TrimPrefix(api.URL, "http://")
	families := scrape(t, Handler())
	for code, want := range map[string]float64{"200": 1, "404": 1} {
		if v := findMetric(t, families, "rest_client_requests_total", map[string]string{"code": code, "method": "GET", "host": host}).GetCounter().GetValue(); v != want {
			t.Errorf("rest_client_requests_total{code=%s} = %v, want %v", code, v, want)
		}
	}
	if c := findMetric(t, families, "rest_client_request_duration_seconds", map[string]string{"verb": "GET", "host": host}).GetHistogram().GetSampleCount(); c != 2 {
		t.Errorf("request duration samples = %d, want 2", c)
	}
	if c := findMetric(t, families, "rest_client_response_size_bytes", map[string]string{"verb": "GET", "host": host}).GetHistogram().GetSampleCount(); c != 2 {
		t.Errorf("response size samples = %d, want 2", c)
	}
	if v := findMetric(t, families, "rest_client_exec_plugin_ttl_seconds", nil).GetGauge().GetValue(); !math.IsInf(v, 1) {
		t.Errorf("exec plugin TTL = %v, want +Inf without exec plugins", v)
	}
}

func TestSLIHandlerServesHealthchecks(t *testing.T) {
	ObserveHealthcheck("syncloop", HealthzType, true)
	ObserveHealthcheck("pleg", HealthzType, false)
	ObserveHealthcheck("pleg", HealthzType, true)
	h := SLIHandler()
	families := scrape(t, h)
	if v := findMetric(t, families, "kubernetes_healthcheck", map[string]string{"name": "pleg", "type": "healthz"}).GetGauge().GetValue(); v != 1 {
		t.Errorf("kubernetes_healthcheck{pleg} = %v, want 1 (the last result)", v)
	}
	for status, want := range map[string]float64{"success": 1, "error": 1} {
		if v := findMetric(t, families, "kubernetes_healthchecks_total", map[string]string{"name": "pleg", "type": "healthz", "status": status}).GetCounter().GetValue(); v != want {
			t.Errorf("kubernetes_healthchecks_total{pleg,%s} = %v, want %v", status, v, want)
		}
	}
	if f := families["kubernetes_healthcheck"]; !strings.HasPrefix(f.GetHelp(), "[STABLE] ") {
		t.Errorf("help %q, want component-base's stability prefix", f.GetHelp())
	}
	if v := findMetric(t, families, "process_start_time_seconds", nil).GetGauge().GetValue(); v < 1e9 {
		t.Errorf("process_start_time_seconds = %v", v)
	}
	if _, ok := families["go_goroutines"]; ok {
		t.Error("/metrics/slis carries the full /metrics set")
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodDelete, "/metrics/slis", nil))
	if _, ok := scrape(t, h)["kubernetes_healthchecks_total"]; ok || rec.Code != http.StatusOK {
		t.Errorf("DELETE did not reset the SLIs (status %d)", rec.Code)
	}
}
