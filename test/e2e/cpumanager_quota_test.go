//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	cri "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodelet/nodelet/internal/testutil"
)

// TestCPUManagerStrictReservationAndCPUQuota runs the static CPU manager on this 2-CPU machine
// with reservedSystemCPUs 0 and strict-cpu-reservation (as upstream's "reservedSystemCPUs are
// excluded for both Gu and non-Gu pods" spec), once with DisableCPUQuotaWithExclusiveCPUs on
// and once off:
//   - the state file's shared pool lacks the reserved CPU;
//   - a Guaranteed pod asking for 1 CPU runs on CPU 1, its container and its pod cgroup without
//     a CFS quota when the gate is on, with the full CPU's quota when it is off;
//   - once it is gone, a BestEffort pod runs on CPU 1 only, never on the reserved CPU 0.
func TestCPUManagerStrictReservationAndCPUQuota(t *testing.T) {
	if cpus := onlineCPUs(t); len(cpus) != 2 {
		t.Skipf("the test expects a 2-CPU machine, this one has %d", len(cpus))
	}
	for _, gate := range []bool{true, false} {
		t.Run(fmt.Sprintf("DisableCPUQuotaWithExclusiveCPUs=%v", gate), func(t *testing.T) {
			cfg := filepath.Join(t.TempDir(), "kubelet.yaml")
			config := fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cpuManagerPolicy: static
cpuManagerReconcilePeriod: 1s
reservedSystemCPUs: "0"
cpuManagerPolicyOptions: {strict-cpu-reservation: "true"}
featureGates: {CPUManagerPolicyBetaOptions: true, CPUManagerPolicyAlphaOptions: true, DisableCPUQuotaWithExclusiveCPUs: %v}
`, gate)
			if err := os.WriteFile(cfg, []byte(config), 0o644); err != nil {
				t.Fatal(err)
			}
			n := startNodelet(t, "--config="+cfg, "--address=127.0.0.1", fmt.Sprintf("--read-only-port=%d", freePort(t)),
				fmt.Sprintf("--port=%d", freePort(t)), "--authentication-token-webhook=false",
				"--authorization-mode=AlwaysAllow", "--cert-dir="+t.TempDir())
			if got, _ := readCPUState(t, n.rootDir); got.DefaultCPUSet != "1" {
				t.Errorf("cpu_manager_state shared pool %q, want 1 (CPU 0 strictly reserved)", got.DefaultCPUSet)
			}

			n.writeManifest("pinned.yaml", cpuPod("pinned", "1"))
			pinned := waitRunning(t, "pinned", "app", 60*time.Second)
			waitCPUsAllowed(t, pinned.Id, "1")
			want := "100000" // a whole CPU's quota per 100ms period
			if gate {
				want = "-1"
			}
			if got := containerQuota(t, pinned.Id); got != want {
				t.Errorf("the pinned container's CFS quota is %s, want %s", got, want)
			}
			if got := podQuota(t, "pinned"); got != want {
				t.Errorf("the pinned pod's cgroup CFS quota is %s, want %s", got, want)
			}

			n.removeManifest("pinned.yaml")
			testutil.WaitFor(t, 60*time.Second, "pinned pod gone", func() (bool, string) {
				left := containers(t, "pinned", "")
				return len(left) == 0, fmt.Sprintf("%d containers", len(left))
			})
			n.writeManifest("shared.yaml", cpuPod("shared", ""))
			shared := waitRunning(t, "shared", "app", 60*time.Second)
			waitCPUsAllowed(t, shared.Id, "1")
		})
	}
}

// containerQuota reads the container's CFS quota from inside it (cgroup v1 or v2), -1 for none.
func containerQuota(t *testing.T, containerID string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	read := "cat /sys/fs/cgroup/cpu.max 2>/dev/null || cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us"
	resp, err := rt.ExecSync(ctx, &cri.ExecSyncRequest{ContainerId: containerID, Cmd: []string{"sh", "-c", read}, Timeout: 5})
	if err != nil || resp.ExitCode != 0 {
		t.Fatalf("reading the CFS quota in %s: %v %+v", containerID, err, resp)
	}
	return quotaOf(string(resp.Stdout))
}

// podQuota reads the CFS quota of a Guaranteed pod's cgroup (cgroupfs driver) from the host.
func podQuota(t *testing.T, podName string) string {
	t.Helper()
	sbs := sandboxes(t, podName)
	if len(sbs) == 0 {
		t.Fatalf("no sandbox of %s", podName)
	}
	pod := "pod" + sbs[0].Metadata.Uid
	for _, file := range []string{"/sys/fs/cgroup/kubepods/" + pod + "/cpu.max", "/sys/fs/cgroup/cpu/kubepods/" + pod + "/cpu.cfs_quota_us"} {
		if data, err := os.ReadFile(file); err == nil {
			return quotaOf(string(data))
		}
	}
	t.Fatalf("no cgroup of %s found under /sys/fs/cgroup", pod)
	return ""
}

// quotaOf is the quota of a v1 cfs_quota_us or v2 cpu.max ("max 100000" is -1).
func quotaOf(s string) string {
	quota, _, _ := strings.Cut(strings.TrimSpace(s), " ")
	if quota == "max" {
		return "-1"
	}
	return quota
}
