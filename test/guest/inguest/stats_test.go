//go:build guestvm

package inguest

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"testing"

	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/nodelet/nodelet/internal/testutil"
)

const (
	// 8Mi of page cache written to the container's disk (inactive_file, which the working set
	// leaves out) and 20Mi in its /dev/shm (shared memory, which it counts).
	statsScript    = "head -c 8388608 /dev/zero >/tmp/f; head -c 20971520 /dev/zero >/dev/shm/x; sleep 3600"
	statsResources = `    resources:
      requests: {cpu: 100m, memory: 64Mi}
      limits: {memory: 128Mi}
`
	memTolerance = 1 << 20
)

// cgroupFigures are a container's memory and CPU as its cgroup v2 files say, and as an
// endpoint reports them.
type cgroupFigures struct {
	usage, workingSet, cpuNs float64
}

// agree says whether what an endpoint reported matches the files within tolerance: memory
// to 1Mi (a sleeping container's memory barely moves), CPU to 5% and 20ms.
func (f cgroupFigures) agree(got cgroupFigures) bool {
	return math.Abs(got.usage-f.usage) <= memTolerance && math.Abs(got.workingSet-f.workingSet) <= memTolerance &&
		math.Abs(got.cpuNs-f.cpuNs) <= 0.05*f.cpuNs+20e6
}

// TestStatsAgreeWithCgroupFiles reads a container's memory usage and working set (usage less
// inactive_file, as cAdvisor counts it) and CPU usage from /stats/summary, /metrics/cadvisor
// and /metrics/resource and compares them with the container's own memory.current,
// memory.stat and cpu.stat.
func TestStatsAgreeWithCgroupFiles(t *testing.T) {
	useDriver(t, "systemd")
	n := startNodelet(t, "cgroupDriver: systemd\n")
	n.writeManifest("stats", staticPod("stats", statsResources, statsScript, "Always"))
	scope := containerCgroup(t, n.waitRunning("stats"))
	testutil.WaitFor(t, podTimeout, "the container's page cache and shared memory written", func() (bool, string) {
		files := readFigures(t, scope)
		return files.workingSet >= 20<<20 && files.usage-files.workingSet >= 4<<20, fmt.Sprintf("%+v", files)
	})
	pod := "stats-" + nodeName
	endpoints := map[string]func() (cgroupFigures, error){
		"/stats/summary": func() (cgroupFigures, error) { return n.summaryFigures(pod) },
		"/metrics/cadvisor": func() (cgroupFigures, error) {
			return n.metricFigures("/metrics/cadvisor", `id="`+scope+`"`, "container_memory_usage_bytes")
		},
		"/metrics/resource": func() (cgroupFigures, error) {
			return n.metricFigures("/metrics/resource", `container="main",namespace="default",pod="`+pod+`"`, "")
		},
	}
	for name, read := range endpoints {
		t.Run(strings.TrimPrefix(name, "/"), func(t *testing.T) {
			testutil.WaitFor(t, podTimeout/2, name+" agreeing with "+scope, func() (bool, string) {
				got, err := read()
				files := readFigures(t, scope)
				if err != nil {
					return false, err.Error()
				}
				if name == "/metrics/resource" { // it has no usage series
					got.usage = files.usage
				}
				return files.agree(got), fmt.Sprintf("reported %+v, files %+v", got, files)
			})
		})
	}
}

// readFigures reads the container's figures from its cgroup files.
func readFigures(t *testing.T, cgroup string) cgroupFigures {
	t.Helper()
	usage, err := strconv.ParseFloat(readCgroup(t, cgroup, "memory.current"), 64)
	if err != nil {
		t.Fatal(err)
	}
	inactive := flatKey(t, readCgroup(t, cgroup, "memory.stat"), "inactive_file")
	return cgroupFigures{
		usage: usage, workingSet: math.Max(0, usage-inactive),
		cpuNs: flatKey(t, readCgroup(t, cgroup, "cpu.stat"), "usage_usec") * 1000,
	}
}

// flatKey reads key from a flat-keyed cgroup file (memory.stat, cpu.stat).
func flatKey(t *testing.T, content, key string) float64 {
	t.Helper()
	for _, line := range strings.Split(content, "\n") {
		if k, v, ok := strings.Cut(line, " "); ok && k == key {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatal(err)
			}
			return f
		}
	}
	t.Fatalf("no %s in %q", key, content)
	return 0
}

// summaryFigures reads the pod's container "main" from /stats/summary.
func (n *nodelet) summaryFigures(pod string) (cgroupFigures, error) {
	body, err := n.get("/stats/summary")
	if err != nil {
		return cgroupFigures{}, err
	}
	var s statsapi.Summary
	if err := json.Unmarshal([]byte(body), &s); err != nil {
		return cgroupFigures{}, err
	}
	for _, p := range s.Pods {
		for _, c := range p.Containers {
			if p.PodRef.Name != pod || c.Name != "main" || c.Memory == nil || c.CPU == nil ||
				c.Memory.UsageBytes == nil || c.Memory.WorkingSetBytes == nil || c.CPU.UsageCoreNanoSeconds == nil {
				continue
			}
			return cgroupFigures{usage: float64(*c.Memory.UsageBytes), workingSet: float64(*c.Memory.WorkingSetBytes),
				cpuNs: float64(*c.CPU.UsageCoreNanoSeconds)}, nil
		}
	}
	return cgroupFigures{}, fmt.Errorf("no container main of %s with memory and CPU in the summary", pod)
}

// metricFigures reads the series of the container whose labels hold match from a metrics
// endpoint; usageMetric, when not empty, names its memory usage series.
func (n *nodelet) metricFigures(path, match, usageMetric string) (cgroupFigures, error) {
	body, err := n.get(path)
	if err != nil {
		return cgroupFigures{}, err
	}
	var f cgroupFigures
	found := map[string]bool{}
	for _, line := range strings.Split(body, "\n") {
		name, rest, ok := strings.Cut(line, "{")
		if !ok || !strings.Contains(rest, match) {
			continue
		}
		fields := strings.Fields(rest[strings.LastIndex(rest, "}")+1:])
		if len(fields) == 0 {
			continue
		}
		v, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			return f, fmt.Errorf("%s: %v", line, err)
		}
		switch name {
		case "container_memory_working_set_bytes":
			f.workingSet = v
		case "container_cpu_usage_seconds_total":
			f.cpuNs = v * 1e9
		case usageMetric:
			f.usage = v
		default:
			continue
		}
		found[name] = true
	}
	if len(found) < 2 || usageMetric != "" && !found[usageMetric] {
		return f, fmt.Errorf("%s: only %v for %s", path, found, match)
	}
	return f, nil
}

// get reads a path of nodelet's read-only port.
func (n *nodelet) get(path string) (string, error) {
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d%s", n.roPort, path))
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s: %s", path, resp.Status)
	}
	return string(b), err
}
