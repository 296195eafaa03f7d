package metrics

import (
	"sort"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// RuntimeCounts is what the runtime holds for this node, counted by the caller (see
// stats.CountRuntime for the count over the PLEG's last relist).
type RuntimeCounts struct {
	// RunningPods is the number of pods with a ready sandbox.
	RunningPods int
	// Containers counts containers by state: "created", "running", "exited", "unknown".
	Containers map[string]int
}

var (
	runningPodsDesc = prometheus.NewDesc("kubelet_running_pods",
		alpha("Number of pods that have a running pod sandbox"), nil, nil)
	runningContainersDesc = prometheus.NewDesc("kubelet_running_containers",
		alpha("Number of containers currently running"), []string{"container_state"}, nil)
)

// runtimeCountCollector reports kubelet_running_pods and kubelet_running_containers at scrape time
// from the function given to SetRuntimeCounter.
type runtimeCountCollector struct {
	mu    sync.Mutex
	count func() RuntimeCounts
}

var runtimeCounter = &runtimeCountCollector{}

// SetRuntimeCounter sets the function kubelet_running_pods and kubelet_running_containers
// are read from at each scrape. Until it is set they are not reported.
func SetRuntimeCounter(f func() RuntimeCounts) {
	runtimeCounter.mu.Lock()
	runtimeCounter.count = f
	runtimeCounter.mu.Unlock()
}

func (c *runtimeCountCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- runningPodsDesc
	ch <- runningContainersDesc
}

func (c *runtimeCountCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	f := c.count
	c.mu.Unlock()
	if f == nil {
		return
	}
	counts := f()
	ch <- prometheus.MustNewConstMetric(runningPodsDesc, prometheus.GaugeValue, float64(counts.RunningPods))
	states := make([]string, 0, len(counts.Containers))
	for s := range counts.Containers {
		states = append(states, s)
	}
	sort.Strings(states)
	for _, s := range states {
		ch <- prometheus.MustNewConstMetric(runningContainersDesc, prometheus.GaugeValue, float64(counts.Containers[s]), s)
	}
}
