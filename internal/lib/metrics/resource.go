package metrics

import (
	"context"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/klog/v2"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// SummarySource gives the CPU and memory summary the resource endpoints are built from
// (*stats.Provider implements it).
type SummarySource interface {
	CPUAndMemorySummary(ctx context.Context) (*statsapi.Summary, error)
}

// scrapeTimeout bounds the summary one scrape waits for.
const scrapeTimeout = 30 * time.Second

var (
	containerLabels = []string{"container", "pod", "namespace"}
	podLabels       = []string{"pod", "namespace"}

	nodeCPUDesc = prometheus.NewDesc("node_cpu_usage_seconds_total",
		stable("Cumulative cpu time consumed by the node in core-seconds"), nil, nil)
	nodeMemoryDesc = prometheus.NewDesc("node_memory_working_set_bytes",
		stable("Current working set of the node in bytes"), nil, nil)
	containerCPUDesc = prometheus.NewDesc("container_cpu_usage_seconds_total",
		stable("Cumulative cpu time consumed by the container in core-seconds"), containerLabels, nil)
	containerMemoryDesc = prometheus.NewDesc("container_memory_working_set_bytes",
		stable("Current working set of the container in bytes"), containerLabels, nil)
	containerStartDesc = prometheus.NewDesc("container_start_time_seconds",
		stable("Start time of the container since unix epoch in seconds"), containerLabels, nil)
	podCPUDesc = prometheus.NewDesc("pod_cpu_usage_seconds_total",
		stable("Cumulative cpu time consumed by the pod in core-seconds"), podLabels, nil)
	podMemoryDesc = prometheus.NewDesc("pod_memory_working_set_bytes",
		stable("Current working set of the pod in bytes"), podLabels, nil)
	scrapeErrorDesc = prometheus.NewDesc("scrape_error",
		alpha("(Deprecated since 1.29.0) 1 if there was an error while getting container metrics, 0 otherwise"), nil, nil)
	resourceScrapeErrorDesc = prometheus.NewDesc("resource_scrape_error",
		stable("1 if there was an error while getting container metrics, 0 otherwise"), nil, nil)
)

// resourceCollector turns a fresh CPU-and-memory summary into the metrics-server's metrics at
// every scrape, so series of removed containers disappear with them.
type resourceCollector struct{ src SummarySource }

// NewResourceHandler serves /metrics/resource from src.
func NewResourceHandler(src SummarySource) http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(resourceCollector{src: src})
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}

func (resourceCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{nodeCPUDesc, nodeMemoryDesc, containerCPUDesc, containerMemoryDesc,
		containerStartDesc, podCPUDesc, podMemoryDesc, scrapeErrorDesc, resourceScrapeErrorDesc} {
		ch <- d
	}
}

func (c resourceCollector) Collect(ch chan<- prometheus.Metric) {
	summary, err := fetchSummary(c.src)
	failed := 0.0
	if err != nil {
		failed = 1
		klog.ErrorS(err, "Getting the summary for /metrics/resource failed")
	}
	ch <- prometheus.MustNewConstMetric(scrapeErrorDesc, prometheus.GaugeValue, failed)
	ch <- prometheus.MustNewConstMetric(resourceScrapeErrorDesc, prometheus.GaugeValue, failed)
	if err != nil {
		return
	}
	emitCPU(ch, nodeCPUDesc, summary.Node.CPU)
	emitMemory(ch, nodeMemoryDesc, summary.Node.Memory)
	for _, pod := range summary.Pods {
		for _, ctr := range pod.Containers {
			labels := []string{ctr.Name, pod.PodRef.Name, pod.PodRef.Namespace}
			if ctr.StartTime.Unix() > 0 {
				ch <- prometheus.MustNewConstMetric(containerStartDesc, prometheus.GaugeValue,
					float64(ctr.StartTime.UnixNano())/float64(time.Second), labels...)
			}
			emitCPU(ch, containerCPUDesc, ctr.CPU, labels...)
			emitMemory(ch, containerMemoryDesc, ctr.Memory, labels...)
		}
		emitCPU(ch, podCPUDesc, pod.CPU, pod.PodRef.Name, pod.PodRef.Namespace)
		emitMemory(ch, podMemoryDesc, pod.Memory, pod.PodRef.Name, pod.PodRef.Namespace)
	}
}

func fetchSummary(src SummarySource) (*statsapi.Summary, error) {
	// A Prometheus collector is given no context: the scrape gets a deadline of its own.
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	return src.CPUAndMemorySummary(ctx)
}

// emitCPU sends cumulative CPU seconds stamped with the sample's time.
func emitCPU(ch chan<- prometheus.Metric, desc *prometheus.Desc, cpu *statsapi.CPUStats, labels ...string) {
	if cpu == nil || cpu.UsageCoreNanoSeconds == nil {
		return
	}
	m := prometheus.MustNewConstMetric(desc, prometheus.CounterValue, float64(*cpu.UsageCoreNanoSeconds)/float64(time.Second), labels...)
	ch <- prometheus.NewMetricWithTimestamp(cpu.Time.Time, m)
}

// emitMemory sends the working set stamped with the sample's time.
func emitMemory(ch chan<- prometheus.Metric, desc *prometheus.Desc, mem *statsapi.MemoryStats, labels ...string) {
	if mem == nil || mem.WorkingSetBytes == nil {
		return
	}
	m := prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, float64(*mem.WorkingSetBytes), labels...)
	ch <- prometheus.NewMetricWithTimestamp(mem.Time.Time, m)
}
