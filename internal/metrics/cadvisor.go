package metrics

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/klog/v2"
)

// nodelet has no cAdvisor; /metrics/cadvisor serves the two series most dashboards and
// alerts use, in cAdvisor's shape: the machine as id="/", each pod with container="", each
// container with its name. Labels nodelet does not know (image, runtime name, cgroup id of
// pods and containers) are empty.
var cadvisorLabels = []string{"container", "id", "image", "name", "namespace", "pod"}

var (
	cadvisorCPUDesc = prometheus.NewDesc("container_cpu_usage_seconds_total",
		"Cumulative cpu time consumed in seconds.", cadvisorLabels, nil)
	cadvisorMemoryDesc = prometheus.NewDesc("container_memory_working_set_bytes",
		"Current working set in bytes.", cadvisorLabels, nil)
)

type cadvisorCollector struct{ src SummarySource }

// NewCadvisorHandler serves a minimal /metrics/cadvisor from src.
func NewCadvisorHandler(src SummarySource) http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(cadvisorCollector{src: src})
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}

func (cadvisorCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- cadvisorCPUDesc
	ch <- cadvisorMemoryDesc
}

func (c cadvisorCollector) Collect(ch chan<- prometheus.Metric) {
	summary, err := fetchSummary(c.src)
	if err != nil {
		klog.ErrorS(err, "Getting the summary for /metrics/cadvisor failed")
		return
	}
	// container, id, image, name, namespace, pod
	emitCPU(ch, cadvisorCPUDesc, summary.Node.CPU, "", "/", "", "", "", "")
	emitMemory(ch, cadvisorMemoryDesc, summary.Node.Memory, "", "/", "", "", "", "")
	for _, pod := range summary.Pods {
		ns, name := pod.PodRef.Namespace, pod.PodRef.Name
		emitCPU(ch, cadvisorCPUDesc, pod.CPU, "", "", "", "", ns, name)
		emitMemory(ch, cadvisorMemoryDesc, pod.Memory, "", "", "", "", ns, name)
		for _, ctr := range pod.Containers {
			emitCPU(ch, cadvisorCPUDesc, ctr.CPU, ctr.Name, "", "", "", ns, name)
			emitMemory(ch, cadvisorMemoryDesc, ctr.Memory, ctr.Name, "", "", "", ns, name)
		}
	}
}
