// Package stats builds the kubelet summary API (/stats/summary): node figures from the host's
// cgroups and /proc, pod and container figures from one CRI ListContainerStats call plus the
// runtime state nodelet already caches, filesystem figures from statfs and directory walks.
package stats

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"k8s.io/utils/ptr"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/nodelet/nodelet/internal/runtime/container"
	"github.com/nodelet/nodelet/internal/runtime/cri"
)

const (
	// defaultVolumeStatsPeriod is how often each pod's volumes are measured (upstream's
	// volumeStatsAggPeriod default).
	defaultVolumeStatsPeriod = time.Minute
	// cpuRateWindow is the shortest window usageNanoCores is computed over.
	cpuRateWindow = time.Second
	// forgetAfter drops cached samples of containers and sandboxes not seen for this long.
	forgetAfter = 10 * time.Minute
)

// Deps is what the summary provider reads from.
type Deps struct {
	NodeName string
	// Pods lists the desired pods; pods without runtime state are left out.
	Pods func() []*v1.Pod
	// PodStatus returns the last runtime state read for a pod (podsync.Cache.Get).
	PodStatus func(types.UID) (*container.PodStatus, bool)
	// Runtime is the CRI stats side of the runtime manager.
	Runtime cri.StatsProvider
	// RootDir is nodelet's root directory (required, the configuration's): its filesystem is
	// the node's, and emptyDir volumes live below it.
	RootDir string
	// PodLogsDir holds container logs (required: podLogsDir).
	PodLogsDir string
	// Host says where /proc and the cgroup hierarchy are; zero means the real ones.
	Host HostPaths
	// VolumeStatsPeriod is how often each pod's emptyDirs are walked (default 1m), by
	// RunVolumeMeter.
	VolumeStatsPeriod time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Volumes measures the volumes the provider cannot walk (CSI volumes); nil reports
	// emptyDirs only.
	Volumes VolumeStatter
	// SystemContainers names the cgroups reported as node.systemContainers (kubelet,
	// runtime, pods, misc); nil reports none.
	SystemContainers func() []SystemContainer
}

// VolumeStatter measures one of a pod's volumes; false when it has no figures (not set up,
// or not a volume it knows).
type VolumeStatter interface {
	VolumeStats(ctx context.Context, pod *v1.Pod, volume string) (statsapi.FsStats, bool)
}

// Provider builds summaries. It is safe for concurrent use.
type Provider struct {
	d       Deps
	rates   *cpuRates
	volumes *volumeMeter

	mu        sync.Mutex
	pids      map[string]int // sandbox ID → infra pid
	bootTime  time.Time
	lastPrune time.Time
}

// NewSummaryProvider returns a provider over d.
func NewSummaryProvider(d Deps) *Provider {
	if d.VolumeStatsPeriod == 0 {
		d.VolumeStatsPeriod = defaultVolumeStatsPeriod
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	d.Host = d.Host.withDefaults()
	return &Provider{
		d: d, rates: newCPURates(cpuRateWindow), volumes: newVolumeMeter(d.RootDir, d.VolumeStatsPeriod, d.Pods),
		pids: map[string]int{},
	}
}

// RunVolumeMeter measures the pods' emptyDir volumes in the background until ctx ends (see
// volumeMeter); summaries report the figures it last found. It returns once every walk has
// stopped.
func (p *Provider) RunVolumeMeter(ctx context.Context) error { return p.volumes.Run(ctx) }

// Summary returns every figure: node, runtime filesystems, pods with containers, network,
// volumes and ephemeral storage.
func (p *Provider) Summary(ctx context.Context) (*statsapi.Summary, error) {
	return p.build(ctx, true)
}

// CPUAndMemorySummary returns only CPU and memory figures (node, pods, containers), as
// /stats/summary?only_cpu_and_memory=true and /metrics/resource serve them. It makes the
// same single CRI call but no filesystem walks.
func (p *Provider) CPUAndMemorySummary(ctx context.Context) (*statsapi.Summary, error) {
	return p.build(ctx, false)
}

func (p *Provider) build(ctx context.Context, full bool) (*statsapi.Summary, error) {
	crStats, err := p.d.Runtime.ListContainerStats(ctx)
	if err != nil {
		return nil, err
	}
	now := p.d.Now()
	node, err := p.nodeStats(now)
	if err != nil {
		return nil, err
	}
	var fsys *filesystems
	if full {
		fsys = p.filesystems(ctx, now)
		node.Fs = fsys.root.fsStats(now)
		node.Runtime = fsys.runtimeStats()
		p.addNodeExtras(&node, now)
	}
	node.SystemContainers = p.systemContainers(now)
	pods := p.podStats(ctx, indexByID(crStats), fsys, now)
	p.pruneCaches(now)
	return &statsapi.Summary{Node: node, Pods: pods}, nil
}

// nodeStats reads the node's CPU and memory; failing to is an error, as upstream.
func (p *Provider) nodeStats(now time.Time) (statsapi.NodeStats, error) {
	h := p.d.Host
	cpu, err := h.cpuUsage()
	if err != nil {
		return statsapi.NodeStats{}, fmt.Errorf("node cpu usage: %w", err)
	}
	mem, err := h.memory()
	if err != nil {
		return statsapi.NodeStats{}, fmt.Errorf("node memory usage: %w", err)
	}
	ts := metav1.NewTime(now)
	return statsapi.NodeStats{
		NodeName:  p.d.NodeName,
		StartTime: metav1.NewTime(p.nodeStartTime()),
		CPU: &statsapi.CPUStats{
			Time: ts, UsageCoreNanoSeconds: ptr.To(cpu), UsageNanoCores: p.rates.nanoCores("node", now, cpu),
		},
		Memory: &statsapi.MemoryStats{
			Time: ts, AvailableBytes: ptr.To(subFloor(mem.capacity, mem.workingSet)), UsageBytes: ptr.To(mem.usage),
			WorkingSetBytes: ptr.To(mem.workingSet), RSSBytes: ptr.To(mem.rss),
			PageFaults: ptr.To(mem.pageFaults), MajorPageFaults: ptr.To(mem.majorPageFaults),
		},
	}, nil
}

// nodeStartTime is the boot time, read once.
func (p *Provider) nodeStartTime() time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bootTime.IsZero() {
		t, err := p.d.Host.bootTime()
		if err != nil {
			klog.V(2).InfoS("Cannot read the boot time for node stats", "err", err)
			return time.Time{}
		}
		p.bootTime = t
	}
	return p.bootTime
}

// addNodeExtras fills the node's network and process figures; they are best effort.
func (p *Provider) addNodeExtras(node *statsapi.NodeStats, now time.Time) {
	h := p.d.Host
	if ifaces, err := readNetDev(filepath.Join(h.Proc, "net", "dev"), hostInterfaceSkipped); err == nil {
		node.Network = networkStats(now, ifaces)
	} else {
		klog.V(2).InfoS("Cannot read the node's network stats", "err", err)
	}
	if maxPID, tasks, err := h.processLimits(); err == nil {
		node.Rlimit = &statsapi.RlimitStats{Time: metav1.NewTime(now), MaxPID: ptr.To(maxPID), NumOfRunningProcesses: ptr.To(tasks)}
	} else {
		klog.V(2).InfoS("Cannot read the node's process limits", "err", err)
	}
}

// defaultInterface is the interface whose figures the network stats repeat at top level.
const defaultInterface = "eth0"

func networkStats(now time.Time, ifaces []ifaceStats) *statsapi.NetworkStats {
	n := &statsapi.NetworkStats{Time: metav1.NewTime(now)}
	for _, i := range ifaces {
		s := statsapi.InterfaceStats{
			Name: i.name, RxBytes: ptr.To(i.rxBytes), RxErrors: ptr.To(i.rxErrors), TxBytes: ptr.To(i.txBytes), TxErrors: ptr.To(i.txErrors),
		}
		n.Interfaces = append(n.Interfaces, s)
		if i.name == defaultInterface {
			n.InterfaceStats = s
		}
	}
	return n
}

// pruneCaches forgets samples of containers and sandboxes gone for a while; it runs at most
// once a minute.
func (p *Provider) pruneCaches(now time.Time) {
	p.mu.Lock()
	if now.Sub(p.lastPrune) < time.Minute {
		p.mu.Unlock()
		return
	}
	p.lastPrune = now
	p.mu.Unlock()
	p.rates.prune(now.Add(-forgetAfter))
}
