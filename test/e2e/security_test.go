//go:build e2e

package e2e

import (
	"os"
	"strings"
	"testing"
	"time"

	cri "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodelet/nodelet/internal/testutil"
)

// seccompDefault puts a container that names no profile under the runtime's default seccomp
// filter, and cpuCFSQuota=false leaves its CPU limit without a CFS quota; both as runc sees
// them from inside the container.
func TestSeccompDefaultAndNoCPUQuota(t *testing.T) {
	n := startNodelet(t, "--seccomp-default", "--cpu-cfs-quota=false")
	n.writeManifest("sec.yaml", `apiVersion: v1
kind: Pod
metadata:
  name: sec
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: `+busybox+`
    imagePullPolicy: IfNotPresent
    resources:
      limits: {cpu: 200m, memory: 64Mi}
    command: ["sh", "-c", "echo seccomp=$(grep '^Seccomp:' /proc/self/status | tr -dc 0-9) quota=$(cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us); exec sleep 3600"]
`)
	c := waitRunning(t, "sec", "main", 60*time.Second)
	ctx, cancel := criCtx()
	defer cancel()
	st, err := rt.ContainerStatus(ctx, &cri.ContainerStatusRequest{ContainerId: c.Id})
	if err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 20*time.Second, "the container's report", func() (bool, string) {
		raw, _ := os.ReadFile(st.Status.LogPath)
		return strings.Contains(string(raw), "seccomp=2 quota=-1"), string(raw)
	})
}
