//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	v1 "k8s.io/api/core/v1"
	cri "k8s.io/cri-api/pkg/apis/runtime/v1"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"

	"github.com/nodelet/nodelet/internal/testutil"
)

// cpuPod is a static pod whose one container sleeps; cpu "" makes it BestEffort, else it is
// Guaranteed with that CPU request and limit.
func cpuPod(name, cpu string) string {
	resources := ""
	if cpu != "" {
		resources = fmt.Sprintf(`
    resources:
      requests: {cpu: "%[1]s", memory: 32Mi}
      limits: {cpu: "%[1]s", memory: 32Mi}`, cpu)
	}
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
spec:
  containers:
  - name: app
    image: %s
    imagePullPolicy: Never
    command: ["sleep", "3600"]%s
`, name, busybox, resources)
}

// cpusAllowed reads Cpus_allowed_list of the container's first process, from inside it.
func cpusAllowed(t *testing.T, containerID string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := rt.ExecSync(ctx, &cri.ExecSyncRequest{ContainerId: containerID, Cmd: []string{"grep", "Cpus_allowed_list", "/proc/1/status"}, Timeout: 5})
	if err != nil || resp.ExitCode != 0 {
		t.Fatalf("reading Cpus_allowed_list in %s: %v %+v", containerID, err, resp)
	}
	_, list, _ := strings.Cut(strings.TrimSpace(string(resp.Stdout)), ":")
	return strings.TrimSpace(list)
}

func waitCPUsAllowed(t *testing.T, containerID, want string) {
	t.Helper()
	testutil.WaitFor(t, 30*time.Second, "Cpus_allowed_list "+want, func() (bool, string) {
		got := cpusAllowed(t, containerID)
		return got == want, "Cpus_allowed_list " + got
	})
}

// TestCPUManagerStaticPinsAndKeepsCPUs runs nodelet with the static CPU manager on this
// 2-CPU machine, with half a CPU reserved (upstream rounds that up to CPU 0):
//   - a Guaranteed pod asking for 1 CPU runs on CPU 1 alone, a BestEffort pod on CPU 0 (both
//     read from inside the containers);
//   - a nodelet restart keeps both containers (same IDs, not restarted) and their CPUs;
//   - a second Guaranteed pod, for which no CPU is left, is refused and never runs.
func TestCPUManagerStaticPinsAndKeepsCPUs(t *testing.T) {
	if cpus := onlineCPUs(t); len(cpus) != 2 {
		t.Skipf("the test expects a 2-CPU machine, this one has %d", len(cpus))
	}
	cfg := filepath.Join(t.TempDir(), "kubelet.yaml")
	config := `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cpuManagerPolicy: static
cpuManagerReconcilePeriod: 1s
systemReserved: {cpu: 500m}
`
	if err := os.WriteFile(cfg, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	port := freePort(t)
	n := startNodelet(t, "--config="+cfg, "--address=127.0.0.1", fmt.Sprintf("--read-only-port=%d", port),
		fmt.Sprintf("--port=%d", freePort(t)), "--authentication-token-webhook=false",
		"--authorization-mode=AlwaysAllow", "--cert-dir="+t.TempDir())

	n.writeManifest("pinned.yaml", cpuPod("pinned", "1"))
	pinned := waitRunning(t, "pinned", "app", 60*time.Second)
	n.writeManifest("shared.yaml", cpuPod("shared", ""))
	shared := waitRunning(t, "shared", "app", 60*time.Second)
	waitCPUsAllowed(t, pinned.Id, "1")
	waitCPUsAllowed(t, shared.Id, "0")
	checkState(t, n.rootDir, "0", "1")
	checkPodResourcesCPUs(t, n.rootDir)
	checkCPUMetrics(t, port, 1)

	n.stop(syscall.SIGTERM)
	n.start()
	time.Sleep(5 * time.Second) // several reconcile passes and pod syncs
	for name, before := range map[string]*cri.Container{"pinned": pinned, "shared": shared} {
		after := runningContainer(t, name, "app")
		if after == nil || after.Id != before.Id {
			t.Errorf("%s: container %s was replaced by %v across the restart", name, before.Id, after)
		}
	}
	if got := cpusAllowed(t, pinned.Id); got != "1" {
		t.Errorf("after the restart the Guaranteed container runs on %q, want 1", got)
	}
	if got := cpusAllowed(t, shared.Id); got != "0" {
		t.Errorf("after the restart the BestEffort container runs on %q, want 0", got)
	}
	checkState(t, n.rootDir, "0", "1")
	checkCPUMetrics(t, port, 0) // restored: the pools from the state, before any new pinning

	n.writeManifest("refused.yaml", cpuPod("refused", "1"))
	var p *v1.Pod
	testutil.WaitFor(t, 30*time.Second, "refused pod failed", func() (bool, string) {
		p = podStatus(t, port, "refused")
		if p == nil {
			return false, "not in /pods yet"
		}
		return p.Status.Phase == v1.PodFailed, string(p.Status.Phase)
	})
	if p.Status.Reason != "UnexpectedAdmissionError" || !strings.Contains(p.Status.Message, "not enough cpus available to satisfy request") {
		t.Errorf("refused pod: reason %q message %q", p.Status.Reason, p.Status.Message)
	}
	if c := containers(t, "refused", ""); len(c) != 0 {
		t.Errorf("the refused pod has %d containers; it must not run on shared CPUs", len(c))
	}

	// Switching to the none policy while the state holds static assignments refuses to start.
	n.stop(syscall.SIGTERM)
	noneCfg := filepath.Join(t.TempDir(), "none.yaml")
	if err := os.WriteFile(noneCfg, []byte(strings.Replace(config, "cpuManagerPolicy: static", "cpuManagerPolicy: none", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	args := append([]string{}, n.args...)
	for i, a := range args {
		if strings.HasPrefix(a, "--config=") {
			args[i] = "--config=" + noneCfg
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, nodeletBin, args...).CombinedOutput()
	want := `configured policy "none" differs from state checkpoint policy "static", please drain this node and delete the CPU manager checkpoint file`
	if err == nil || !strings.Contains(string(out), want) {
		t.Errorf("nodelet with the none policy over static state: %v, output:\n%s", err, tail(string(out), 3000))
	}
}

// checkPodResourcesCPUs reads the pod-resources API: the Guaranteed container holds CPU 1, the
// BestEffort one none, and CPU 1 is what can be given out.
func checkPodResourcesCPUs(t *testing.T, rootDir string) {
	t.Helper()
	client := dialPodResources(t, filepath.Join(rootDir, "pod-resources", "kubelet.sock"))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	list, err := client.List(ctx, &podresourcesv1.ListPodResourcesRequest{}, grpc.WaitForReady(true))
	if err != nil {
		t.Fatalf("pod-resources List: %v", err)
	}
	want := map[string]string{"pinned-" + nodeName: "[1]", "shared-" + nodeName: "[]"}
	for _, p := range list.PodResources {
		if w, ok := want[p.Name]; ok {
			if got := fmt.Sprint(p.Containers[0].CpuIds); got != w {
				t.Errorf("pod-resources: %s holds CPUs %s, want %s", p.Name, got, w)
			}
			delete(want, p.Name)
		}
	}
	if len(want) != 0 {
		t.Errorf("pod-resources List lacks %v", want)
	}
	alloc, err := client.GetAllocatableResources(ctx, &podresourcesv1.AllocatableResourcesRequest{})
	if err != nil || fmt.Sprint(alloc.GetCpuIds()) != "[1]" {
		t.Errorf("pod-resources allocatable CPUs %v (%v), want [1]", alloc.GetCpuIds(), err)
	}
}

// checkCPUMetrics reads /metrics with CPU 1 held exclusively and CPU 0 reserved: an empty
// shared pool (upstream does not count reserved CPUs in it), one exclusive CPU, and at least
// minRequests pinning requests.
func checkCPUMetrics(t *testing.T, port int, minRequests float64) {
	t.Helper()
	text := metricsText(t, port, "/metrics")
	sample := func(name string) float64 {
		for _, line := range strings.Split(text, "\n") {
			if value, ok := strings.CutPrefix(line, name+" "); ok {
				var v float64
				if _, err := fmt.Sscan(value, &v); err == nil {
					return v
				}
			}
		}
		t.Errorf("/metrics lacks %s", name)
		return -1
	}
	if got := sample("kubelet_cpu_manager_pinning_requests_total"); got < minRequests {
		t.Errorf("kubelet_cpu_manager_pinning_requests_total %v, want at least %v", got, minRequests)
	}
	if got := sample("kubelet_cpu_manager_shared_pool_size_millicores"); got != 0 {
		t.Errorf("kubelet_cpu_manager_shared_pool_size_millicores %v, want 0 (CPU 0 reserved, CPU 1 pinned)", got)
	}
	if got := sample("kubelet_cpu_manager_exclusive_cpu_allocation_count"); got != 1 {
		t.Errorf("kubelet_cpu_manager_exclusive_cpu_allocation_count %v, want 1", got)
	}
	if !strings.Contains(text, `kubelet_cpu_manager_allocation_per_numa{numa_node="0"} 1`) {
		t.Errorf("/metrics lacks kubelet_cpu_manager_allocation_per_numa{numa_node=\"0\"} 1")
	}
}

// checkState reads cpu_manager_state: the shared pool and the one exclusive assignment.
func checkState(t *testing.T, rootDir, shared, exclusive string) {
	t.Helper()
	f, data := readCPUState(t, rootDir)
	var held []string
	for _, containers := range f.Entries {
		for _, cpus := range containers {
			held = append(held, cpus)
		}
	}
	if f.PolicyName != "static" || f.DefaultCPUSet != shared || len(held) != 1 || held[0] != exclusive || f.Checksum == 0 {
		t.Errorf("cpu_manager_state %s: want policy static, shared %s, one container on %s", data, shared, exclusive)
	}
}

// cpuState is cpu_manager_state's JSON.
type cpuState struct {
	PolicyName    string                       `json:"policyName"`
	DefaultCPUSet string                       `json:"defaultCpuSet"`
	Entries       map[string]map[string]string `json:"entries"`
	Checksum      uint64                       `json:"checksum"`
}

// readCPUState reads cpu_manager_state, parsed and as it is.
func readCPUState(t *testing.T, rootDir string) (cpuState, []byte) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(rootDir, "cpu_manager_state"))
	if err != nil {
		t.Fatal(err)
	}
	var f cpuState
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatal(err)
	}
	return f, data
}
