package stats

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	"k8s.io/utils/ptr"

	"github.com/nodelet/nodelet/internal/runtime/container"
	"github.com/nodelet/nodelet/internal/runtime/cri"
	"github.com/nodelet/nodelet/internal/volumes"
)

// emptyDirPlugin is the directory emptyDir volumes live in under a pod's volumes directory.
const emptyDirPlugin = "kubernetes.io~empty-dir"

func indexByID(stats []*cri.ContainerStats) map[string]*cri.ContainerStats {
	out := make(map[string]*cri.ContainerStats, len(stats))
	for _, s := range stats {
		out[s.GetAttributes().GetId()] = s
	}
	return out
}

// podStats builds one entry per desired pod the runtime holds a sandbox for. fsys is nil for
// CPU-and-memory-only summaries.
func (p *Provider) podStats(ctx context.Context, crStats map[string]*cri.ContainerStats, fsys *filesystems, now time.Time) []statsapi.PodStats {
	pods := []statsapi.PodStats{}
	livePIDs := map[string]int{}
	for _, pod := range p.d.Pods() {
		rs, ok := p.d.PodStatus(pod.UID)
		if !ok || len(rs.Sandboxes) == 0 {
			continue
		}
		sandbox := rs.Sandboxes[0]
		ps := statsapi.PodStats{
			PodRef:    statsapi.PodReference{Name: pod.Name, Namespace: pod.Namespace, UID: string(pod.UID)},
			StartTime: metav1.NewTime(sandbox.CreatedAt),
		}
		for _, c := range runningContainers(rs) {
			if cs, ok := crStats[c.ID]; ok {
				ps.Containers = append(ps.Containers, p.containerStats(ctx, pod, c, cs, fsys, now))
			}
		}
		ps.CPU, ps.Memory = sumCPU(ps.Containers), sumMemory(ps.Containers, podMemoryLimit(pod))
		if fsys != nil {
			if sandbox.Ready {
				ps.Network = p.podNetwork(ctx, sandbox.ID, livePIDs, now)
				if n, ok := p.d.Host.podProcessCount(livePIDs[sandbox.ID]); ok {
					ps.ProcessStats = &statsapi.ProcessStats{ProcessCount: ptr.To(n)}
				}
			}
			ps.VolumeStats = p.volumeStats(ctx, pod, now)
			ps.EphemeralStorage = ephemeralStorage(fsys, &ps, now)
		}
		pods = append(pods, ps)
	}
	if fsys != nil {
		p.mu.Lock()
		p.pids = livePIDs // sandboxes not seen any more are forgotten
		p.mu.Unlock()
	}
	return pods
}

// runningContainers returns the newest instance of each container name if it is running,
// sorted by name.
func runningContainers(rs *container.PodStatus) []*container.ContainerStatus {
	seen := map[string]bool{}
	var out []*container.ContainerStatus
	for _, c := range rs.Containers { // newest first
		if seen[c.Name] {
			continue
		}
		seen[c.Name] = true
		if c.State == container.StateRunning {
			out = append(out, c)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func (p *Provider) containerStats(ctx context.Context, pod *v1.Pod, c *container.ContainerStatus, cs *cri.ContainerStats, fsys *filesystems, now time.Time) statsapi.ContainerStats {
	out := statsapi.ContainerStats{Name: c.Name, StartTime: metav1.NewTime(c.CreatedAt)}
	if cpu := cs.GetCpu(); cpu != nil && cpu.GetUsageCoreNanoSeconds() != nil {
		at := time.Unix(0, cpu.GetTimestamp())
		usage := cpu.GetUsageCoreNanoSeconds().GetValue()
		out.CPU = &statsapi.CPUStats{
			Time: metav1.NewTime(at), UsageCoreNanoSeconds: ptr.To(usage), UsageNanoCores: p.rates.nanoCores(c.ID, at, usage),
		}
	}
	if mem := cs.GetMemory(); mem != nil {
		out.Memory = memoryStats(mem, containerMemoryLimit(pod, c.Name))
	}
	if fsys != nil {
		out.Rootfs = fsys.writableLayer(cs.GetWritableLayer(), now)
		out.Logs = p.logStats(ctx, pod, c.Name, fsys, now)
	}
	return out
}

// memoryStats converts CRI memory usage; with a memory limit, available is what is left of it
// above the working set (as cAdvisor reports it).
func memoryStats(mem *cri.MemoryUsage, limit uint64) *statsapi.MemoryStats {
	val := func(v *cri.UInt64Value) *uint64 {
		if v == nil {
			return nil
		}
		return ptr.To(v.GetValue())
	}
	out := &statsapi.MemoryStats{
		Time:            metav1.NewTime(time.Unix(0, mem.GetTimestamp())),
		UsageBytes:      val(mem.GetUsageBytes()),
		WorkingSetBytes: val(mem.GetWorkingSetBytes()),
		RSSBytes:        val(mem.GetRssBytes()),
		PageFaults:      val(mem.GetPageFaults()),
		MajorPageFaults: val(mem.GetMajorPageFaults()),
	}
	if mem.GetAvailableBytes().GetValue() > 0 {
		out.AvailableBytes = ptr.To(mem.GetAvailableBytes().GetValue())
	} else if limit > 0 && out.WorkingSetBytes != nil {
		out.AvailableBytes = ptr.To(subFloor(limit, *out.WorkingSetBytes))
	}
	return out
}

func containerMemoryLimit(pod *v1.Pod, name string) uint64 {
	for i := range pod.Spec.Containers {
		if c := &pod.Spec.Containers[i]; c.Name == name {
			if q, ok := c.Resources.Limits[v1.ResourceMemory]; ok && q.Value() > 0 {
				return uint64(q.Value())
			}
		}
	}
	return 0
}

// podMemoryLimit is the sum of the app containers' memory limits when every one has a limit
// (the pod is then bounded), else 0.
func podMemoryLimit(pod *v1.Pod) uint64 {
	var sum uint64
	for i := range pod.Spec.Containers {
		l := containerMemoryLimit(pod, pod.Spec.Containers[i].Name)
		if l == 0 {
			return 0
		}
		sum += l
	}
	return sum
}

// sumCPU adds the containers' CPU; the time is the newest sample's.
func sumCPU(cs []statsapi.ContainerStats) *statsapi.CPUStats {
	var out *statsapi.CPUStats
	for _, c := range cs {
		if c.CPU == nil {
			continue
		}
		if out == nil {
			out = &statsapi.CPUStats{UsageCoreNanoSeconds: ptr.To[uint64](0)}
		}
		out.Time = later(out.Time, c.CPU.Time)
		*out.UsageCoreNanoSeconds += ptr.Deref(c.CPU.UsageCoreNanoSeconds, 0)
		if c.CPU.UsageNanoCores != nil {
			out.UsageNanoCores = ptr.To(ptr.Deref(out.UsageNanoCores, 0) + *c.CPU.UsageNanoCores)
		}
	}
	return out
}

// sumMemory adds the containers' memory figures.
func sumMemory(cs []statsapi.ContainerStats, limit uint64) *statsapi.MemoryStats {
	var out *statsapi.MemoryStats
	add := func(dst **uint64, v *uint64) {
		if v != nil {
			*dst = ptr.To(ptr.Deref(*dst, 0) + *v)
		}
	}
	for _, c := range cs {
		m := c.Memory
		if m == nil {
			continue
		}
		if out == nil {
			out = &statsapi.MemoryStats{}
		}
		out.Time = later(out.Time, m.Time)
		add(&out.UsageBytes, m.UsageBytes)
		add(&out.WorkingSetBytes, m.WorkingSetBytes)
		add(&out.RSSBytes, m.RSSBytes)
		add(&out.PageFaults, m.PageFaults)
		add(&out.MajorPageFaults, m.MajorPageFaults)
	}
	if out != nil && limit > 0 && out.WorkingSetBytes != nil {
		out.AvailableBytes = ptr.To(subFloor(limit, *out.WorkingSetBytes))
	}
	return out
}

// podNetwork reads the pod's interfaces from its sandbox's network namespace. The sandbox's
// pid is asked of the runtime once and remembered.
func (p *Provider) podNetwork(ctx context.Context, sandboxID string, live map[string]int, now time.Time) *statsapi.NetworkStats {
	p.mu.Lock()
	pid, ok := p.pids[sandboxID]
	p.mu.Unlock()
	if !ok {
		var err error
		if pid, err = p.d.Runtime.SandboxPID(ctx, sandboxID); err != nil {
			klog.V(2).InfoS("Cannot find the sandbox's process for network stats", "sandbox", sandboxID, "err", err)
			return nil
		}
	}
	live[sandboxID] = pid
	if pid <= 0 {
		return nil
	}
	ifaces, err := readNetDev(filepath.Join(p.d.Host.Proc, strconv.Itoa(pid), "net", "dev"), podInterfaceSkipped)
	if err != nil {
		delete(live, sandboxID) // the process went away; ask again next time
		klog.V(4).InfoS("Cannot read the pod's network stats", "sandbox", sandboxID, "pid", pid, "err", err)
		return nil
	}
	return networkStats(now, ifaces)
}

// logStats measures a container's log directory (every instance's log files).
// Only nodelet and the runtime write there, and rotation bounds the files, so this walk is
// short; upstream measures logs on each request too.
func (p *Provider) logStats(ctx context.Context, pod *v1.Pod, container string, fsys *filesystems, now time.Time) *statsapi.FsStats {
	dir := filepath.Join(p.d.PodLogsDir, fmt.Sprintf("%s_%s_%s", pod.Namespace, pod.Name, pod.UID), container)
	u, err := diskUsage(ctx, dir)
	if err != nil {
		klog.V(4).InfoS("Cannot measure a container's logs", "path", dir, "err", err)
		return nil
	}
	return fsys.logs.partStats(now, u.bytes, u.inodes)
}

// volumeStats reports the figures the volume meter last found for the pod's emptyDir volumes
// (none before its first walk), and asks d.Volumes for those it cannot walk (CSI volumes,
// through their driver); a claim's volume carries its PVCRef, which kubelet_volume_stats_*
// are labelled by.
func (p *Provider) volumeStats(ctx context.Context, pod *v1.Pod, now time.Time) []statsapi.VolumeStats {
	var out []statsapi.VolumeStats
	for _, vol := range pod.Spec.Volumes {
		if vol.EmptyDir == nil {
			if vs, ok := p.externalVolumeStats(ctx, pod, &vol); ok {
				out = append(out, vs)
			}
			continue
		}
		m, ok := p.volumes.get(pod.UID, vol.Name)
		if !ok {
			continue
		}
		fs, _ := statFS(filepath.Join(p.d.RootDir, "pods", string(pod.UID), "volumes", emptyDirPlugin, vol.Name))
		out = append(out, statsapi.VolumeStats{Name: vol.Name, FsStats: *fs.partStats(m.at, m.bytes, m.inodes)})
	}
	return out
}

// ClaimVolumeStats returns the figures of the pods' claim-backed volumes that have them, each
// with its PVCRef, for the kubelet_volume_stats_* metrics.
func (p *Provider) ClaimVolumeStats(ctx context.Context) []statsapi.VolumeStats {
	var out []statsapi.VolumeStats
	for _, pod := range p.d.Pods() {
		for i := range pod.Spec.Volumes {
			if vol := &pod.Spec.Volumes[i]; volumes.ClaimOf(pod, vol) != nil {
				if vs, ok := p.externalVolumeStats(ctx, pod, vol); ok {
					out = append(out, vs)
				}
			}
		}
	}
	return out
}

func (p *Provider) externalVolumeStats(ctx context.Context, pod *v1.Pod, vol *v1.Volume) (statsapi.VolumeStats, bool) {
	claim := volumes.ClaimOf(pod, vol)
	if p.d.Volumes == nil || (vol.CSI == nil && claim == nil) {
		return statsapi.VolumeStats{}, false
	}
	fs, ok := p.d.Volumes.VolumeStats(ctx, pod, vol.Name)
	if !ok {
		return statsapi.VolumeStats{}, false
	}
	vs := statsapi.VolumeStats{Name: vol.Name, FsStats: fs}
	if claim != nil {
		vs.PVCRef = &statsapi.PVCReference{Name: claim.ClaimName, Namespace: pod.Namespace}
	}
	return vs, true
}

// ephemeralStorage is what the pod uses of the node's disk: writable layers, logs and
// emptyDir volumes.
func ephemeralStorage(fsys *filesystems, ps *statsapi.PodStats, now time.Time) *statsapi.FsStats {
	var parts []*statsapi.FsStats
	for _, c := range ps.Containers {
		parts = append(parts, c.Rootfs, c.Logs)
	}
	for i := range ps.VolumeStats {
		parts = append(parts, &ps.VolumeStats[i].FsStats)
	}
	return sumFs(fsys.root, now, parts...)
}

func later(a, b metav1.Time) metav1.Time {
	if b.After(a.Time) {
		return b
	}
	return a
}
