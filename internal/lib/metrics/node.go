package metrics

import (
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// imagePullBuckets are upstream's buckets of kubelet_image_pull_duration_seconds, in seconds.
var imagePullBuckets = []float64{1, 5, 10, 20, 30, 60, 120, 180, 240, 300, 360, 480, 600, 900, 1200, 1800, 2700, 3600}

// imageSizeLabels are the image_size_in_bytes label values by lower bound (exclusive), as
// upstream buckets them: an image of exactly 10 MiB is still "0-10MB".
var imageSizeLabels = []struct {
	above uint64
	label string
}{
	{0, "0-10MB"},
	{10 << 20, "10MB-100MB"},
	{100 << 20, "100MB-500MB"},
	{500 << 20, "500MB-1GB"},
	{1 << 30, "1GB-5GB"},
	{5 << 30, "5GB-10GB"},
	{10 << 30, "10GB-20GB"},
	{20 << 30, "20GB-30GB"},
	{30 << 30, "30GB-40GB"},
	{40 << 30, "40GB-60GB"},
	{60 << 30, "60GB-100GB"},
	{100 << 30, "GT100GB"},
}

var (
	imagePullDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "kubelet_image_pull_duration_seconds", Help: alpha("Duration in seconds to pull an image."),
		Buckets: imagePullBuckets,
	}, []string{"image_size_in_bytes"})
	admissionRejections = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kubelet_admission_rejections_total", Help: alpha("Cumulative number pod admission rejections by the Kubelet."),
	}, []string{"reason"})
)

// ImageSizeBucket is the image_size_in_bytes label of an image of size bytes; a size the
// runtime did not report (0) is "N/A".
func ImageSizeBucket(size uint64) string {
	if size == 0 {
		return "N/A"
	}
	for i := len(imageSizeLabels) - 1; i >= 0; i-- {
		if size > imageSizeLabels[i].above {
			return imageSizeLabels[i].label
		}
	}
	return ""
}

// ImagePulled records a successful pull of an image of size bytes that took d.
func ImagePulled(size uint64, d time.Duration) {
	imagePullDuration.WithLabelValues(ImageSizeBucket(size)).Observe(d.Seconds())
}

// admissionReasons are the rejection reasons counted under their own name, as upstream keeps
// the label bounded; any other reason counts as "Other", an "OutOf<resource>" of an extended
// resource as "OutOfExtendedResources".
var admissionReasons = map[string]bool{
	"AppArmor": true, "PodOSSelectorNodeLabelDoesNotMatch": true, "PodOSNotSupported": true,
	"InvalidNodeInfo": true, "InitContainerRestartPolicyForbidden": true,
	"SupplementalGroupsPolicyNotSupported": true, "UnexpectedAdmissionError": true, "UnknownReason": true,
	"UnexpectedPredicateFailureType": true, "OutOfcpu": true, "OutOfmemory": true,
	"OutOfephemeral-storage": true, "OutOfpods": true, "node(s) had taints that the pod didn't tolerate": true,
	"Evicted": true, "SysctlForbidden": true, "TopologyAffinityError": true, "NodeShutdown": true,
}

// AdmissionRejected counts a pod refused at admission with reason.
func AdmissionRejected(reason string) {
	switch {
	case admissionReasons[reason]:
	case strings.HasPrefix(reason, "OutOf"):
		reason = "OutOfExtendedResources"
	default:
		reason = "Other"
	}
	admissionRejections.WithLabelValues(reason).Inc()
}
