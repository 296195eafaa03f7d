package stats

import (
	"github.com/nodelet/nodelet/internal/lib/metrics"
	"github.com/nodelet/nodelet/internal/runtime/container"
)

// CountRuntime counts what a relist found for kubelet_running_pods and
// kubelet_running_containers: pods with a ready sandbox, and containers by state. Pods
// labelled for another node (several nodelets may share a runtime) are left out.
func CountRuntime(pods []*container.RunningPod, nodeName string) metrics.RuntimeCounts {
	counts := metrics.RuntimeCounts{Containers: map[string]int{}}
	for _, p := range pods {
		if !p.OnNode(nodeName) {
			continue
		}
		for _, s := range p.Sandboxes {
			if s.Ready {
				counts.RunningPods++
				break
			}
		}
		for _, c := range p.Containers {
			counts.Containers[string(c.State)]++
		}
	}
	return counts
}
