//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	cri "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodelet/nodelet/internal/testutil"
)

// memoryManagerConfig is a configuration with the Static memory manager: what node allocatable
// holds back of memory (kubeReserved 256Mi plus the default hard eviction threshold 100Mi) is
// reserved on NUMA node 0, as upstream requires.
const memoryManagerConfig = `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
memoryManagerPolicy: Static
kubeReserved:
  memory: 256Mi
reservedMemory:
- numaNode: 0
  limits:
    memory: 356Mi
`

// guaranteedPodYAML is a Guaranteed static pod asking for memory, printing its memory nodes.
func guaranteedPodYAML(name, memory string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
spec:
  restartPolicy: Always
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: %s
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "grep Mems_allowed_list /proc/self/status; exec sleep 3600"]
    resources:
      limits: {cpu: 100m, memory: %s}
`, name, busybox, memory)
}

// memoryState is the part of memory_manager_state the tests read.
type memoryState struct {
	PolicyName string                                   `json:"policyName"`
	Entries    map[string]map[string][]memoryStateBlock `json:"entries"`
}

type memoryStateBlock struct {
	NUMAAffinity []int  `json:"numaAffinity"`
	Type         string `json:"type"`
	Size         uint64 `json:"size"`
}

func readMemoryState(t *testing.T, rootDir string) memoryState {
	t.Helper()
	var s memoryState
	data, err := os.ReadFile(filepath.Join(rootDir, "memory_manager_state"))
	if err == nil {
		err = json.Unmarshal(data, &s)
	}
	if err != nil {
		t.Fatalf("memory_manager_state: %v", err)
	}
	return s
}

// TestMemoryManagerPinsGuaranteedPodToNUMANode0 runs the Static memory manager: a Guaranteed
// pod's container is created with cpuset.mems 0 (its runtime spec says so, and the cgroup it
// runs in), the state file records its block, a BestEffort pod is not pinned, the block goes
// when the pod does, and a pod whose memory fits on no NUMA node is refused.
func TestMemoryManagerPinsGuaranteedPodToNUMANode0(t *testing.T) {
	cfgFile := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfgFile, []byte(memoryManagerConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	n := startNodelet(t, "--config="+cfgFile)
	n.writeManifest("pinned.yaml", guaranteedPodYAML("pinned", "64Mi"))
	n.writeManifest("loose.yaml", podYAML("loose", "Always", "exec sleep 3600"))
	pinned := waitRunning(t, "pinned", "main", 60*time.Second)
	loose := waitRunning(t, "loose", "main", 60*time.Second)

	if got := specMems(t, pinned.Id); got != "0" {
		t.Errorf("Guaranteed container's runtime spec mems = %q, want 0", got)
	}
	if got := specMems(t, loose.Id); got != "" {
		t.Errorf("BestEffort container's runtime spec mems = %q, want none", got)
	}
	if got := strings.TrimSpace(execOut(t, pinned.Id, "cat", "/sys/fs/cgroup/cpuset/cpuset.mems")); got != "0" {
		t.Errorf("cpuset.mems inside the container = %q, want 0", got)
	}

	uid := pinned.Labels["io.kubernetes.pod.uid"]
	state := readMemoryState(t, n.rootDir)
	blocks := state.Entries[uid]["main"]
	if state.PolicyName != "Static" || len(blocks) != 1 || blocks[0].Type != "memory" || blocks[0].Size != 64<<20 ||
		len(blocks[0].NUMAAffinity) != 1 || blocks[0].NUMAAffinity[0] != 0 {
		t.Errorf("state file = %+v, want a 64Mi memory block on node 0 for pod %s", state, uid)
	}

	// NUMA node 0 holds its MemTotal less the 356Mi reserved: asking for all of it cannot fit.
	node0 := readNodeMemTotal(t)
	n.writeManifest("toobig.yaml", guaranteedPodYAML("toobig", fmt.Sprintf("%dKi", node0)))
	waitMemoryManagerRefusal(t, n, "toobig")
	if got := containers(t, "toobig", ""); len(got) != 0 {
		t.Errorf("the refused pod has containers: %v", got)
	}

	n.removeManifest("pinned.yaml")
	testutil.WaitFor(t, 60*time.Second, "the pinned pod's block released", func() (bool, string) {
		s := readMemoryState(t, n.rootDir)
		return len(s.Entries[uid]) == 0, fmt.Sprintf("entries %+v", s.Entries)
	})
}

// waitMemoryManagerRefusal waits for nodelet to log the pod's rejection by the memory manager.
func waitMemoryManagerRefusal(t *testing.T, n *nodelet, pod string) {
	t.Helper()
	testutil.WaitFor(t, 30*time.Second, pod+" refused by the memory manager", func() (bool, string) {
		for _, line := range strings.Split(n.log(), "\n") {
			if strings.Contains(line, `"Pod rejected"`) && strings.Contains(line, pod) {
				ok := strings.Contains(line, `reason="UnexpectedAdmissionError"`) && strings.Contains(line, "[memorymanager]")
				return ok, line
			}
		}
		return false, "no rejection logged"
	})
}

// specMems is the cpuset memory nodes in the container's runtime spec, as the runtime reports
// it ("" when the spec sets none).
func specMems(t *testing.T, id string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := rt.ContainerStatus(ctx, &cri.ContainerStatusRequest{ContainerId: id, Verbose: true})
	if err != nil {
		t.Fatal(err)
	}
	var info struct {
		RuntimeSpec struct {
			Linux struct {
				Resources struct {
					CPU *struct {
						Mems string `json:"mems"`
					} `json:"cpu"`
				} `json:"resources"`
			} `json:"linux"`
		} `json:"runtimeSpec"`
	}
	if err := json.Unmarshal([]byte(resp.Info["info"]), &info); err != nil {
		t.Fatalf("container %s verbose info: %v", id, err)
	}
	if cpu := info.RuntimeSpec.Linux.Resources.CPU; cpu != nil {
		return cpu.Mems
	}
	return ""
}

// execOut runs cmd in the container (by CRI ID) and returns its output.
func execOut(t *testing.T, id string, cmd ...string) string {
	t.Helper()
	resp := execSync(t, id, cmd...)
	if resp.ExitCode != 0 {
		t.Fatalf("exec %v: %+v", cmd, resp)
	}
	return string(resp.Stdout)
}

// readNodeMemTotal is NUMA node 0's MemTotal in KiB.
func readNodeMemTotal(t *testing.T) int64 {
	t.Helper()
	data, err := os.ReadFile("/sys/devices/system/node/node0/meminfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) >= 4 && f[2] == "MemTotal:" {
			var kb int64
			if _, err := fmt.Sscan(f[3], &kb); err == nil {
				return kb
			}
		}
	}
	t.Fatalf("node0 meminfo has no MemTotal: %s", data)
	return 0
}
