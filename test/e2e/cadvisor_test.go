//go:build e2e

package e2e

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/nodelet/nodelet/internal/testutil"
)

// TestCadvisorSeriesFromCgroups reads /metrics/cadvisor through the API server's node proxy:
// a limited pod's series carry cAdvisor's labels and the values its cgroups hold, its writable
// layer's use is container_fs_usage_bytes and its inodes container_fs_inodes_total, and an OOM kill in a container counts in
// container_oom_events_total.
func TestCadvisorSeriesFromCgroups(t *testing.T) {
	c := joinCluster(t)
	limited := podSpec("limited", "head -c 1048576 /dev/zero > /filler; sleep 3600")
	limited.Spec.Containers[0].Resources = v1.ResourceRequirements{
		Limits: v1.ResourceList{v1.ResourceCPU: resource.MustParse("200m"), v1.ResourceMemory: resource.MustParse("64Mi")},
	}
	c.createPod(limited)
	c.waitPodPhase("limited", v1.PodRunning, 60*time.Second)
	oom := podSpec("oomer", "sleep 2; tail /dev/zero")
	oom.Spec.Containers[0].Resources = v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceMemory: resource.MustParse("24Mi")}}
	c.createPod(oom)

	ctr := fmt.Sprintf(`container="main",id="[^"]+",image="[^"]+",name="[0-9a-f]{64}",namespace="%s",pod="limited"`, c.ns)
	ctrFs := fmt.Sprintf(`container="main",device="[^"]+",id="[^"]+",image="[^"]+",name="[0-9a-f]{64}",namespace="%s",pod="limited"`, c.ns)
	var text string
	testutil.WaitFor(t, 60*time.Second, "cadvisor series of the limited pod, its 1 MiB file and an OOM kill", func() (bool, string) {
		text = kubectl(t, "get", "--raw", "/api/v1/nodes/"+nodeName+"/proxy/metrics/cadvisor")
		oomKills := value(text, fmt.Sprintf(`container_oom_events_total\{container="",id="[^"]+",image="",name="",namespace="%s",pod="oomer"\}`, c.ns))
		layer := value(text, "container_fs_usage_bytes\\{"+ctrFs+"\\}")
		return value(text, "container_memory_working_set_bytes\\{"+ctr+"\\}") > 0 && oomKills >= 1 && layer >= 1<<20,
			fmt.Sprintf("oom kills %v, writable layer %v bytes", oomKills, layer)
	})
	if limit := value(text, "container_fs_limit_bytes\\{"+ctrFs+"\\}"); limit < 1<<30 {
		t.Errorf("container_fs_limit_bytes = %v, want the size of the filesystem holding the layer", limit)
	}
	// As cAdvisor for a writable layer: the inodes the layer uses (a few for /filler), not the
	// filesystem's millions, and no free count.
	if inodes := value(text, "container_fs_inodes_total\\{"+ctrFs+"\\}"); inodes < 1 || inodes > 100 {
		t.Errorf("container_fs_inodes_total = %v, want the few inodes the writable layer uses", inodes)
	}
	if free := value(text, "container_fs_inodes_free\\{"+ctrFs+"\\}"); free != 0 {
		t.Errorf("container_fs_inodes_free = %v, want 0 as cAdvisor reports for a writable layer", free)
	}
	for series, want := range map[string]float64{
		"container_spec_memory_limit_bytes": 64 << 20,
		"container_spec_cpu_quota":          20000,
		"container_spec_cpu_period":         100000,
		"container_processes":               1,
	} {
		if got := value(text, series+"\\{"+ctr+"\\}"); got != want {
			t.Errorf("%s = %v, want %v", series, got, want)
		}
	}
	for _, series := range []string{"container_cpu_usage_seconds_total", "container_memory_usage_bytes", "container_threads", "container_file_descriptors", "container_start_time_seconds", "container_last_seen"} {
		if value(text, series+"\\{"+ctr+"\\}") <= 0 {
			t.Errorf("%s of the limited container missing or zero", series)
		}
	}
	podNet := fmt.Sprintf(`container_network_receive_packets_total\{container="",id="[^"]+",image="",interface="eth0",name="",namespace="%s",pod="limited"\}`, c.ns)
	if !regexp.MustCompile(podNet).MatchString(text) {
		t.Error("no pod network series for eth0")
	}
	for _, series := range []string{"machine_cpu_cores", "machine_memory_bytes"} {
		if !strings.Contains(text, series+"{") {
			t.Errorf("%s missing", series)
		}
	}
}

// value is the first sample whose name and labels match re, or -1.
func value(text, re string) float64 {
	m := regexp.MustCompile(`(?m)^` + re + ` ([0-9.e+-]+)`).FindStringSubmatch(text)
	if m == nil {
		return -1
	}
	v, _ := strconv.ParseFloat(m[1], 64)
	return v
}
