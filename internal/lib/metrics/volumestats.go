package metrics

import (
	"context"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

var (
	volumeStatsLabels = []string{"namespace", "persistentvolumeclaim"}

	volumeCapacityDesc = prometheus.NewDesc("kubelet_volume_stats_capacity_bytes",
		alpha("Capacity in bytes of the volume"), volumeStatsLabels, nil)
	volumeAvailableDesc = prometheus.NewDesc("kubelet_volume_stats_available_bytes",
		alpha("Number of available bytes in the volume"), volumeStatsLabels, nil)
	volumeUsedDesc = prometheus.NewDesc("kubelet_volume_stats_used_bytes",
		alpha("Number of used bytes in the volume"), volumeStatsLabels, nil)
	volumeInodesDesc = prometheus.NewDesc("kubelet_volume_stats_inodes",
		alpha("Maximum number of inodes in the volume"), volumeStatsLabels, nil)
	volumeInodesFreeDesc = prometheus.NewDesc("kubelet_volume_stats_inodes_free",
		alpha("Number of free inodes in the volume"), volumeStatsLabels, nil)
	volumeInodesUsedDesc = prometheus.NewDesc("kubelet_volume_stats_inodes_used",
		alpha("Number of used inodes in the volume"), volumeStatsLabels, nil)
)

// volumeStatsCollector reports kubelet_volume_stats_* for the claims the pods mount, from
// the function given to SetClaimVolumeStats, at each scrape.
type volumeStatsCollector struct {
	mu    sync.Mutex
	stats func(ctx context.Context) []statsapi.VolumeStats
}

var claimVolumeStats = &volumeStatsCollector{}

// SetClaimVolumeStats sets where kubelet_volume_stats_* are read from: the figures of the
// pods' claim-backed volumes, each with its PVCRef. Until it is set they are not reported.
func SetClaimVolumeStats(f func(ctx context.Context) []statsapi.VolumeStats) {
	claimVolumeStats.mu.Lock()
	claimVolumeStats.stats = f
	claimVolumeStats.mu.Unlock()
}

func (c *volumeStatsCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{volumeCapacityDesc, volumeAvailableDesc, volumeUsedDesc,
		volumeInodesDesc, volumeInodesFreeDesc, volumeInodesUsedDesc} {
		ch <- d
	}
}

func (c *volumeStatsCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	f := c.stats
	c.mu.Unlock()
	if f == nil {
		return
	}
	// A Prometheus collector is given no context: the scrape gets a deadline of its own.
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	seen := map[statsapi.PVCReference]bool{}
	for _, vs := range f(ctx) {
		// Pods sharing a claim report it once.
		if vs.PVCRef == nil || seen[*vs.PVCRef] {
			continue
		}
		seen[*vs.PVCRef] = true
		for _, m := range []struct {
			desc  *prometheus.Desc
			value *uint64
		}{
			{volumeCapacityDesc, vs.CapacityBytes}, {volumeAvailableDesc, vs.AvailableBytes}, {volumeUsedDesc, vs.UsedBytes},
			{volumeInodesDesc, vs.Inodes}, {volumeInodesFreeDesc, vs.InodesFree}, {volumeInodesUsedDesc, vs.InodesUsed},
		} {
			if m.value != nil {
				ch <- prometheus.MustNewConstMetric(m.desc, prometheus.GaugeValue, float64(*m.value), vs.PVCRef.Namespace, vs.PVCRef.Name)
			}
		}
	}
}
