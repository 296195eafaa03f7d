// Package cadvisor serves /metrics/cadvisor: the container series Prometheus dashboards and
// alert rules read, under cAdvisor's names and labels, read straight from the cgroup files (v1,
// or v2 through runc's cgroup library) of the machine, each pod and each running container
// nodelet runs (and, for the container_fs series, the writable layers the runtime reports).
package cadvisor

import (
	"context"
	"net/http"
	"os"
	"path"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"sync"
	"time"

	"k8s.io/utils/ptr"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/internal/runtime/container"
	"github.com/nodelet/nodelet/internal/server/stats"
)

// Source is what the collector reads pod identity from.
type Source struct {
	Pods      func() []*v1.Pod
	PodStatus func(types.UID) (*container.PodStatus, bool)
	// PodCgroup is the pod's cgroup path (e.g. /kubepods/burstable/pod<uid>, or the
	// kubepods-burstable-pod<uid>.slice path with the systemd driver), "" when it has none.
	PodCgroup func(types.UID) string
	// CgroupRoot, Proc and Sys default to /sys/fs/cgroup, /proc and /sys.
	CgroupRoot, Proc, Sys string
	// MachineMemory is the machine's memory in bytes.
	MachineMemory int64
	// OOMs are the kills the kernel log reported; nil counts only the cgroups' own counters.
	OOMs *OOMCounter
	// Layers reads the containers' writable layers by container ID (the container_fs series);
	// nil leaves those series out.
	Layers func(context.Context) (map[string]stats.Layer, error)
}

// layersTimeout bounds the runtime call behind the container_fs series of one scrape.
const layersTimeout = 10 * time.Second

// NewHandler serves the series of src.
func NewHandler(src Source) http.Handler {
	if src.CgroupRoot == "" {
		src.CgroupRoot = "/sys/fs/cgroup"
	}
	if src.Proc == "" {
		src.Proc = "/proc"
	}
	if src.Sys == "" {
		src.Sys = "/sys"
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(&collector{src: src})
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}

type collector struct{ src Source }

// target is one cgroup with its labels: container, id, image, name, namespace, pod.
type target struct {
	path   string
	labels []string
	pod    bool   // a pod's cgroup: network series
	netPID int    // a process in the pod's network namespace
	start  *int64 // container start, unix seconds
	id     string // the container's runtime ID ("" for the machine and pods)
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) { prometheus.DescribeByCollect(c, ch) }

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	ids := machineIDs(c.src.Proc)
	ch <- prometheus.MustNewConstMetric(machineCores, prometheus.GaugeValue, float64(goruntime.NumCPU()), ids...)
	if c.src.MachineMemory > 0 {
		ch <- prometheus.MustNewConstMetric(machineMemory, prometheus.GaugeValue, float64(c.src.MachineMemory), ids...)
	}
	now := float64(time.Now().UnixNano()) / 1e9
	targets := c.targets()
	layers := c.layers(len(targets) > 1)
	for _, t := range targets {
		c.emit(ch, t, readCgroup(c.src.CgroupRoot, t.path), layers, now)
	}
}

// layers are the containers' writable layers, when there are containers to report.
func (c *collector) layers(hasContainers bool) map[string]stats.Layer {
	if !hasContainers || c.src.Layers == nil {
		return nil
	}
	// A Prometheus collector is given no context: the scrape gets a deadline of its own.
	ctx, cancel := context.WithTimeout(context.Background(), layersTimeout)
	defer cancel()
	layers, err := c.src.Layers(ctx)
	if err != nil {
		klog.V(2).InfoS("Cannot read the containers' writable layers; the container_fs series are left out", "err", err)
	}
	return layers
}

// targets are the machine, each pod with a cgroup and each running container in it.
func (c *collector) targets() []target {
	out := []target{{path: "/", labels: []string{"", "/", "", "", "", ""}}}
	if c.src.Pods == nil {
		return out
	}
	for _, pod := range c.src.Pods() {
		podPath := c.src.PodCgroup(pod.UID)
		if podPath == "" {
			continue
		}
		pt := target{path: podPath, labels: []string{"", podPath, "", "", pod.Namespace, pod.Name}, pod: true}
		rs, ok := c.src.PodStatus(pod.UID)
		if ok && len(rs.Sandboxes) > 0 {
			if pids := readPIDs(filepath.Join(c.containerDir(podPath, rs.Sandboxes[0].ID, "pids", "memory"), "cgroup.procs")); len(pids) > 0 {
				pt.netPID = pids[0]
			}
		}
		out = append(out, pt)
		if !ok {
			continue
		}
		for _, cs := range rs.Containers {
			if cs.State != container.StateRunning {
				continue
			}
			p := c.containerCgroup(podPath, cs.ID)
			start := cs.StartedAt.Unix()
			out = append(out, target{path: p, labels: []string{cs.Name, p, cs.Image, cs.ID, pod.Namespace, pod.Name}, start: &start, id: cs.ID})
		}
	}
	return out
}

// containerCgroup is the cgroup path of the container id in the pod's cgroup: <id> with the
// runtime's cgroupfs driver, a cri-containerd-<id>.scope with its systemd driver.
func (c *collector) containerCgroup(podPath, id string) string {
	scope := path.Join(podPath, "cri-containerd-"+id+".scope")
	if _, err := os.Stat(c.containerDir(podPath, "cri-containerd-"+id+".scope", "memory")); err == nil {
		return scope
	}
	return path.Join(podPath, id)
}

// containerDir is the directory of the container's cgroup in the first of the v1 trees
// mounted (the one tree on v2).
func (c *collector) containerDir(podPath, name string, mounts ...string) string {
	if unified(c.src.CgroupRoot) {
		return filepath.Join(c.src.CgroupRoot, podPath, name)
	}
	return firstDir(c.src.CgroupRoot, path.Join(podPath, name), mounts...)
}

func (c *collector) emit(ch chan<- prometheus.Metric, t target, s cgroupStats, layers map[string]stats.Layer, now float64) {
	counter := func(d *prometheus.Desc, v *uint64, scale float64) {
		if v != nil {
			ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(*v)*scale, t.labels...)
		}
	}
	gauge := func(d *prometheus.Desc, v *uint64) {
		if v != nil {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(*v), t.labels...)
		}
	}
	counter(cpuUsage, s.cpuUsageNs, 1e-9)
	counter(cpuUser, s.cpuUserNs, 1e-9)
	counter(cpuSystem, s.cpuSystemNs, 1e-9)
	counter(cfsPeriods, s.cfsPeriods, 1)
	counter(cfsThrottledPeriods, s.cfsThrottled, 1)
	counter(cfsThrottledSeconds, s.cfsThrottledNs, 1e-9)
	c.emitMemory(ch, t, s)
	if seen := c.src.OOMs.get(t.path); seen > 0 && (s.oomKills == nil || *s.oomKills < seen) {
		s.oomKills = &seen
	}
	counter(oomEvents, s.oomKills, 1)
	c.emitIO(ch, t, s)
	if t.path != "/" {
		gauge(specCPUShares, s.cpuShares)
		if s.cpuQuota != nil && *s.cpuQuota > 0 {
			gauge(specCPUQuota, ptr.To(uint64(*s.cpuQuota)))
		}
		if s.cpuPeriod != nil && *s.cpuPeriod > 0 {
			gauge(specCPUPeriod, ptr.To(uint64(*s.cpuPeriod)))
		}
		gauge(specMemoryLimit, limitOrZero(s.memLimit))
		gauge(specMemoryReserve, limitOrZero(s.memSoftLimit))
		if s.memSwapLimit != nil {
			gauge(specMemorySwapLimit, limitOrZero(s.memSwapLimit))
		}
		gauge(threadsMax, s.pidsMax)
		gauge(processes, ptr.To(uint64(len(s.procs))))
		gauge(threads, ptr.To(uint64(len(s.tasks))))
		fds, sockets, nofile := processFiles(c.src.Proc, s.procs)
		gauge(fileDescriptors, &fds)
		gauge(socketsDesc, &sockets)
		if nofile != nil {
			ch <- prometheus.MustNewConstMetric(ulimitsSoft, prometheus.GaugeValue, float64(*nofile), append(append([]string{}, t.labels...), "max_open_files")...)
		}
	}
	if l, ok := layers[t.id]; ok {
		lv := append(append([]string{}, t.labels...), deviceName(c.src.Sys, l.Device))
		ch <- prometheus.MustNewConstMetric(fsUsage, prometheus.GaugeValue, float64(l.UsedBytes), lv...)
		ch <- prometheus.MustNewConstMetric(fsLimit, prometheus.GaugeValue, float64(l.CapacityBytes), lv...)
		if l.InodesUsed != nil {
			// As cAdvisor's handlers that measure a writable layer: "total" is the inodes the
			// layer uses, and no free count is known for it.
			ch <- prometheus.MustNewConstMetric(fsInodesFree, prometheus.GaugeValue, 0, lv...)
			ch <- prometheus.MustNewConstMetric(fsInodesTotal, prometheus.GaugeValue, float64(*l.InodesUsed), lv...)
		}
	}
	if t.start != nil {
		ch <- prometheus.MustNewConstMetric(startTime, prometheus.GaugeValue, float64(*t.start), t.labels...)
	}
	ch <- prometheus.MustNewConstMetric(lastSeen, prometheus.GaugeValue, now, t.labels...)
	if t.pod && t.netPID > 0 {
		emitNetwork(ch, c.src.Proc, t)
	}
}

func (c *collector) emitMemory(ch chan<- prometheus.Metric, t target, s cgroupStats) {
	gauge := func(d *prometheus.Desc, v *uint64) {
		if v != nil {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(*v), t.labels...)
		}
	}
	gauge(memUsage, s.memUsage)
	gauge(memMaxUsage, s.memMaxUsage)
	gauge(memSwap, s.memSwap)
	if s.memFailcnt != nil {
		ch <- prometheus.MustNewConstMetric(memFailcnt, prometheus.CounterValue, float64(*s.memFailcnt), t.labels...)
	}
	if s.memStat == nil {
		return
	}
	gauge(memCache, get(s.memStat, "total_cache"))
	gauge(memRSS, get(s.memStat, "total_rss"))
	gauge(memMappedFile, get(s.memStat, "total_mapped_file"))
	// pgfault/pgmajfault count this cgroup's own faults, total_* its whole subtree.
	for _, f := range []struct{ key, kind, scope string }{
		{"pgfault", "pgfault", "container"}, {"pgmajfault", "pgmajfault", "container"},
		{"total_pgfault", "pgfault", "hierarchy"}, {"total_pgmajfault", "pgmajfault", "hierarchy"},
	} {
		if v, ok := s.memStat[f.key]; ok {
			ch <- prometheus.MustNewConstMetric(memFailures, prometheus.CounterValue, float64(v), append(append([]string{}, t.labels...), f.kind, f.scope)...)
		}
	}
	if s.memUsage != nil {
		ws := *s.memUsage
		if inactive := s.memStat["total_inactive_file"]; inactive < ws {
			ws -= inactive
		} else {
			ws = 0
		}
		gauge(memWorkingSet, &ws)
	}
}

// emitIO reports block I/O per device: bytes and operations read and written, and the bytes
// of every operation blkio counts.
func (c *collector) emitIO(ch chan<- prometheus.Metric, t target, s cgroupStats) {
	withDevice := func(dev string) []string { return append(append([]string{}, t.labels...), deviceName(c.src.Sys, dev)) }
	for _, d := range s.ioBytes {
		ch <- prometheus.MustNewConstMetric(fsReads, prometheus.CounterValue, float64(d.ops["Read"]), withDevice(d.device)...)
		ch <- prometheus.MustNewConstMetric(fsWrites, prometheus.CounterValue, float64(d.ops["Write"]), withDevice(d.device)...)
		major, minor, _ := strings.Cut(d.device, ":")
		for _, op := range d.order {
			lv := append(withDevice(d.device), major, minor, op)
			ch <- prometheus.MustNewConstMetric(blkioUsage, prometheus.CounterValue, float64(d.ops[op]), lv...)
		}
	}
	for _, d := range s.ioOps {
		ch <- prometheus.MustNewConstMetric(fsReadOps, prometheus.CounterValue, float64(d.ops["Read"]), withDevice(d.device)...)
		ch <- prometheus.MustNewConstMetric(fsWriteOps, prometheus.CounterValue, float64(d.ops["Write"]), withDevice(d.device)...)
	}
}

// limitOrZero reports an unlimited memory cgroup (the kernel's page-rounded maximum) as 0, as
// cAdvisor does.
func limitOrZero(v *uint64) *uint64 {
	if v == nil || *v >= 1<<62 {
		return ptr.To(uint64(0))
	}
	return v
}

// machineIDs are the boot_id, machine_id and system_uuid labels of the machine series; one
// that cannot be read is empty.
func machineIDs(proc string) []string {
	read := func(file string) string {
		b, _ := os.ReadFile(file)
		return strings.TrimSpace(string(b))
	}
	return []string{read(filepath.Join(proc, "sys", "kernel", "random", "boot_id")), read("/etc/machine-id"), read("/sys/class/dmi/id/product_uuid")}
}

// OOMCounter counts the kernel's OOM kills by the victim's cgroup and each cgroup above it, so
// a pod's count survives the container cgroup the kill happened in (internal/node/oom feeds it).
type OOMCounter struct {
	mu     sync.Mutex
	counts map[string]uint64
}

// Add records one kill whose victim was in cgroup.
func (o *OOMCounter) Add(cgroup string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.counts == nil {
		o.counts = map[string]uint64{}
	}
	for p := path.Clean(cgroup); p != "/" && p != "."; p = path.Dir(p) {
		o.counts[p]++
	}
}

func (o *OOMCounter) get(cgroup string) uint64 {
	if o == nil {
		return 0
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.counts[cgroup]
}
