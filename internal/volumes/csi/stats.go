package csi

import (
	"context"
	"path/filepath"
	"sync"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// statsAge is how long a volume's figures are reused, as upstream's volumeStatsAggPeriod
// default: asking every driver on every /stats/summary would load them for nothing.
const statsAge = time.Minute

type cachedStats struct {
	fs statsapi.FsStats
	at time.Time
}

// Stats asks the drivers for their volumes' figures (NodeGetVolumeStats) for /stats/summary.
type Stats struct {
	plugin *Plugin
	mu     sync.Mutex
	cache  map[string]cachedStats // by volume dir
}

// NewStats measures the volumes p set up.
func NewStats(p *Plugin) *Stats { return &Stats{plugin: p, cache: map[string]cachedStats{}} }

// VolumeStats reports pod's CSI volume named volume, if the driver gives figures.
func (s *Stats) VolumeStats(ctx context.Context, pod *v1.Pod, volume string) (statsapi.FsStats, bool) {
	dir := filepath.Join(s.plugin.rootDir, "pods", string(pod.UID), "volumes", PluginName, volume)
	now := time.Now()
	s.mu.Lock()
	c, ok := s.cache[dir]
	s.mu.Unlock()
	if ok && now.Sub(c.at) < statsAge {
		return c.fs, true
	}
	fs, ok := s.measure(ctx, dir, now)
	if !ok {
		return statsapi.FsStats{}, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for d, c := range s.cache { // forget volumes not asked about for a while
		if now.Sub(c.at) > 2*statsAge {
			delete(s.cache, d)
		}
	}
	s.cache[dir] = cachedStats{fs: fs, at: now}
	return fs, true
}

func (s *Stats) measure(ctx context.Context, dir string, now time.Time) (statsapi.FsStats, bool) {
	data, err := readVolData(dir)
	if err != nil {
		return statsapi.FsStats{}, false
	}
	d, err := s.plugin.drivers.get(data.DriverName)
	if err != nil || !d.caps[csipb.NodeServiceCapability_RPC_GET_VOLUME_STATS] {
		return statsapi.FsStats{}, false
	}
	staging := ""
	if d.caps[csipb.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME] && data.VolumeLifecycleMode != lifecycleMode(true) {
		staging = s.plugin.stagingPath(data.DriverName, data.VolumeHandle)
	}
	u, err := d.client.volumeStats(ctx, data.VolumeHandle, targetIn(dir, data.VolumeMode == string(v1.PersistentVolumeBlock)), staging)
	if err != nil {
		klog.V(4).InfoS("NodeGetVolumeStats failed", "driver", data.DriverName, "volumeHandle", data.VolumeHandle, "err", err)
		return statsapi.FsStats{}, false
	}
	return statsapi.FsStats{
		Time: metav1.NewTime(now), CapacityBytes: unsigned(u.CapacityBytes), AvailableBytes: unsigned(u.AvailableBytes),
		UsedBytes: unsigned(u.UsedBytes), Inodes: unsigned(u.Inodes), InodesFree: unsigned(u.InodesFree), InodesUsed: unsigned(u.InodesUsed),
	}, true
}

func unsigned(v *int64) *uint64 {
	if v == nil || *v < 0 {
		return nil
	}
	u := uint64(*v)
	return &u
}
