//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	cri "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodelet/nodelet/internal/testutil"
)

// upstreamSettingsPod: a Guaranteed pod (100m, 64Mi) with a memory-backed emptyDir without
// sizeLimit.
func upstreamSettingsPod(name string) string {
	return guaranteedPodYAML(name, "64Mi") + `    volumeMounts:
    - {name: mem, mountPath: /mem}
  volumes:
  - name: mem
    emptyDir: {medium: Memory}
`
}

// TestRuntimeSettingsAsUpstream checks on the real containerd (2 or 1.6, cgroup v1 with the memsw
// controller, no SELinux) what upstream 1.33 sends that the runtime shows:
//   - the container's memory+swap is capped at its memory limit (NoSwap on cgroup v1; containerd
//     1.6 caps it so by itself when nothing is sent, so this one holds on older nodelets too:
//     internal/runtime/kuberuntime's TestSwapOnCgroupV1AsUpstream proves nodelet sends it);
//   - the memory-backed emptyDir's tmpfs is the pod's memory limit, not half the host's RAM;
//   - RunPodSandbox carries the pod's totals, which containerd writes into the sandbox's spec
//     as its sandbox-cpu-*/sandbox-memory annotations;
//   - RuntimeConfig is asked for the cgroup driver: nodelet takes containerd 2's answer, and
//     containerd 1.6's Unimplemented makes it keep cgroupDriver, saying either as upstream does.
func TestRuntimeSettingsAsUpstream(t *testing.T) {
	n := startNodelet(t)
	n.writeManifest("upstreamrt.yaml", upstreamSettingsPod("upstreamrt"))
	c := waitRunning(t, "upstreamrt", "main", 60*time.Second)

	t.Run("memory+swap capped at the memory limit", func(t *testing.T) {
		got := strings.TrimSpace(execOut(t, c.Id, "cat", "/sys/fs/cgroup/memory/memory.memsw.limit_in_bytes"))
		if got != fmt.Sprint(64<<20) {
			t.Errorf("memory.memsw.limit_in_bytes = %s, want %d (the memory limit: no swap)", got, 64<<20)
		}
	})

	t.Run("memory-backed emptyDir sized by the pod's limit", func(t *testing.T) {
		var line string
		for _, l := range strings.Split(execOut(t, c.Id, "cat", "/proc/mounts"), "\n") {
			if f := strings.Fields(l); len(f) > 3 && f[1] == "/mem" {
				line = l
			}
		}
		if !strings.Contains(line, "tmpfs") || !strings.Contains(line, "size=65536k") {
			t.Errorf("/mem is %q, want a tmpfs of size=65536k (64Mi)", line)
		}
	})

	t.Run("sandbox resources", func(t *testing.T) {
		sbs := sandboxes(t, "upstreamrt")
		if len(sbs) != 1 {
			t.Fatalf("%d sandboxes", len(sbs))
		}
		ctx, cancel := criCtx()
		defer cancel()
		st, err := rt.PodSandboxStatus(ctx, &cri.PodSandboxStatusRequest{PodSandboxId: sbs[0].Id, Verbose: true})
		if err != nil {
			t.Fatal(err)
		}
		var info struct {
			RuntimeSpec struct {
				Annotations map[string]string `json:"annotations"`
			} `json:"runtimeSpec"`
		}
		if err := json.Unmarshal([]byte(st.Info["info"]), &info); err != nil {
			t.Fatalf("sandbox info: %v", err)
		}
		a := info.RuntimeSpec.Annotations
		for key, want := range map[string]string{
			"io.kubernetes.cri.sandbox-cpu-period": "100000",
			"io.kubernetes.cri.sandbox-cpu-quota":  "10000",
			"io.kubernetes.cri.sandbox-cpu-shares": "102",
			"io.kubernetes.cri.sandbox-memory":     fmt.Sprint(64 << 20),
		} {
			if a[key] != want {
				t.Errorf("sandbox annotation %s = %q, want %q", key, a[key], want)
			}
		}
	})

	t.Run("cgroup driver asked of the runtime", func(t *testing.T) {
		ctx, cancel := criCtx()
		defer cancel()
		said := "Falling back to using cgroupDriver from kubelet config"
		if resp, err := rt.RuntimeConfig(ctx, &cri.RuntimeConfigRequest{}); err == nil {
			said = fmt.Sprintf("Using cgroup driver setting received from the CRI runtime\" cgroupDriver=%q",
				strings.ToLower(resp.GetLinux().GetCgroupDriver().String()))
		}
		if !strings.Contains(n.log(), said) {
			t.Errorf("nodelet's log does not say %q (RuntimeConfig not asked, or its answer not taken)", said)
		}
	})

	// The emptyDir's tmpfs goes with the pod, before the test's directory is removed.
	n.removeManifest("upstreamrt.yaml")
	testutil.WaitFor(t, 90*time.Second, "the emptyDir's tmpfs unmounted", func() (bool, string) {
		data, err := os.ReadFile("/proc/self/mountinfo")
		return err == nil && !strings.Contains(string(data), n.rootDir), "still mounted under " + n.rootDir
	})
}
