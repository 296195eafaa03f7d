//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	cri "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodelet/nodelet/internal/testutil"
)

const busybox = "nodelet.local/busybox:1.36"

// podYAML is a one-container static pod running a shell script.
func podYAML(name, policy, script string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
spec:
  restartPolicy: %s
  terminationGracePeriodSeconds: 2
  containers:
  - name: main
    image: %s
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", %q]
`, name, policy, busybox, script)
}

func TestStaticPodRunsWithNetworkAndLogs(t *testing.T) {
	n := startNodelet(t)
	n.writeManifest("web.yaml", podYAML("web", "Always", "echo hello from $(hostname); exec sleep 3600"))
	c := waitRunning(t, "web", "main", 60*time.Second)

	sbs := sandboxes(t, "web")
	if len(sbs) != 1 {
		t.Fatalf("want 1 sandbox, got %d", len(sbs))
	}
	ctx, cancel := criCtx()
	defer cancel()
	st, err := rt.PodSandboxStatus(ctx, &cri.PodSandboxStatusRequest{PodSandboxId: sbs[0].Id})
	if err != nil {
		t.Fatal(err)
	}
	if ip := st.Status.GetNetwork().GetIp(); !strings.HasPrefix(ip, "10.85.") {
		t.Fatalf("pod IP %q is not on the nodelet0 bridge", ip)
	}
	cs, err := rt.ContainerStatus(ctx, &cri.ContainerStatusRequest{ContainerId: c.Id})
	if err != nil {
		t.Fatal(err)
	}
	logPath := cs.Status.LogPath
	if !strings.HasPrefix(logPath, "/var/log/pods/default_web-"+nodeName+"_") {
		t.Fatalf("log path %q not under /var/log/pods/<ns>_<name>_<uid>", logPath)
	}
	testutil.WaitFor(t, 10*time.Second, "log line", func() (bool, string) {
		b, _ := os.ReadFile(logPath)
		return strings.Contains(string(b), "hello from web"), string(b)
	})
}

func TestEditedManifestReplacesPod(t *testing.T) {
	n := startNodelet(t)
	n.writeManifest("edit.yaml", podYAML("edit", "Always", "exec sleep 3600"))
	first := waitRunning(t, "edit", "main", 60*time.Second)
	oldUID := first.Labels["io.kubernetes.pod.uid"]

	n.writeManifest("edit.yaml", podYAML("edit", "Always", "echo v2; exec sleep 3600"))
	testutil.WaitFor(t, 60*time.Second, "pod replaced by one with a new UID", func() (bool, string) {
		c := runningContainer(t, "edit", "main")
		if c == nil {
			return false, "no running container"
		}
		return c.Labels["io.kubernetes.pod.uid"] != oldUID && len(sandboxes(t, "edit")) == 1,
			fmt.Sprintf("uid %s, %d sandboxes", c.Labels["io.kubernetes.pod.uid"], len(sandboxes(t, "edit")))
	})
}

func TestDeletedManifestRemovesContainersAndSandbox(t *testing.T) {
	n := startNodelet(t)
	n.writeManifest("gone.yaml", podYAML("gone", "Always", "exec sleep 3600"))
	waitRunning(t, "gone", "main", 60*time.Second)
	n.removeManifest("gone.yaml")
	testutil.WaitFor(t, 30*time.Second, "containers and sandbox removed", func() (bool, string) {
		cs, sbs := containers(t, "gone", ""), sandboxes(t, "gone")
		return len(cs) == 0 && len(sbs) == 0, fmt.Sprintf("%d containers, %d sandboxes", len(cs), len(sbs))
	})
}

func TestCrashingContainerBacksOffUnderAlways(t *testing.T) {
	n := startNodelet(t)
	n.writeManifest("crash.yaml", podYAML("crash", "Always", "echo dying; exit 1"))
	// Record each attempt's creation time as it is seen, so container GC cannot hide one.
	created := map[uint32]time.Time{}
	testutil.WaitFor(t, 90*time.Second, "three restarts", func() (bool, string) {
		for a, at := range createdByAttempt(containers(t, "crash", "main")) {
			created[a] = at
		}
		_, ok := created[3]
		return ok, fmt.Sprintf("attempts seen %d", len(created))
	})
	gap1 := created[1].Sub(created[0])
	gap2 := created[2].Sub(created[1])
	gap3 := created[3].Sub(created[2])
	t.Logf("restart gaps: %v, %v, %v", gap1, gap2, gap3)
	if gap1 > 5*time.Second {
		t.Errorf("first restart took %v; it should be immediate", gap1)
	}
	if gap2 < 9*time.Second || gap3 < 19*time.Second || gap3 <= gap2 {
		t.Errorf("back-off did not grow 10s→20s: gaps %v, %v", gap2, gap3)
	}
}

func TestExitedContainerStaysDownUnderNever(t *testing.T) {
	n := startNodelet(t)
	n.writeManifest("once.yaml", podYAML("once", "Never", "echo done; exit 1"))
	testutil.WaitFor(t, 60*time.Second, "container exited", func() (bool, string) {
		cs := containers(t, "once", "main")
		return len(cs) == 1 && cs[0].State == cri.ContainerState_CONTAINER_EXITED, fmt.Sprintf("%d containers", len(cs))
	})
	time.Sleep(12 * time.Second)
	if cs := containers(t, "once", "main"); len(cs) != 1 {
		t.Fatalf("container restarted under restartPolicy Never: %d instances", len(cs))
	}
}

func TestMalformedManifestLeavesOtherPodsRunning(t *testing.T) {
	n := startNodelet(t)
	n.writeManifest("good.yaml", podYAML("good", "Always", "exec sleep 3600"))
	before := waitRunning(t, "good", "main", 60*time.Second)
	n.writeManifest("bad.yaml", "apiVersion: v1\nkind: Pod\nmetadata: [this is not\n")
	n.writeManifest("invalid.yaml", podYAML("Invalid_Name", "Always", "true"))
	n.writeManifest("good2.yaml", podYAML("good2", "Always", "exec sleep 3600"))
	waitRunning(t, "good2", "main", 60*time.Second)
	testutil.WaitFor(t, 15*time.Second, "the bad files named in the log", func() (bool, string) {
		l := n.log()
		return strings.Contains(l, "bad.yaml") && strings.Contains(l, "invalid.yaml"), "not yet"
	})
	after := runningContainer(t, "good", "main")
	if after == nil || after.Id != before.Id {
		t.Fatalf("good pod's container changed after a bad manifest appeared")
	}
}

func TestRestartedNodeletAdoptsRunningPods(t *testing.T) {
	n := startNodelet(t)
	n.writeManifest("keep.yaml", podYAML("keep", "Always", "exec sleep 3600"))
	before := waitRunning(t, "keep", "main", 60*time.Second)
	n.stop(syscall.SIGKILL)
	n.start()
	time.Sleep(8 * time.Second) // several sync, relist and housekeeping rounds
	cs := containers(t, "keep", "main")
	if len(cs) != 1 || cs[0].Id != before.Id || cs[0].State != cri.ContainerState_CONTAINER_RUNNING {
		t.Fatalf("after restart: %d containers, want the original %s still running", len(cs), before.Id)
	}
	if cs[0].Metadata.Attempt != 0 {
		t.Fatalf("restart count moved to %d", cs[0].Metadata.Attempt)
	}
}

func TestOrphanedPodIsRemovedAtStart(t *testing.T) {
	n := startNodelet(t)
	n.writeManifest("orphan.yaml", podYAML("orphan", "Always", "exec sleep 3600"))
	waitRunning(t, "orphan", "main", 60*time.Second)
	n.stop(syscall.SIGTERM)
	if err := os.Remove(filepath.Join(n.manifests, "orphan.yaml")); err != nil {
		t.Fatal(err)
	}
	n.start()
	testutil.WaitFor(t, 30*time.Second, "orphaned pod removed", func() (bool, string) {
		return len(sandboxes(t, "orphan")) == 0, "still there"
	})
}

func maxAttempt(cs []*cri.Container) uint32 {
	var m uint32
	for _, c := range cs {
		if c.Metadata.Attempt > m {
			m = c.Metadata.Attempt
		}
	}
	return m
}

func createdByAttempt(cs []*cri.Container) map[uint32]time.Time {
	out := map[uint32]time.Time{}
	for _, c := range cs {
		out[c.Metadata.Attempt] = time.Unix(0, c.CreatedAt)
	}
	return out
}

// nodelet sets the kernel tunables the upstream kubelet sets; the machine's values come back
// afterwards so other tests see the host as it was.
func TestKernelTunablesAreSetAtStart(t *testing.T) {
	const path = "/proc/sys/vm/overcommit_memory"
	saved, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.WriteFile(path, saved, 0o644) })
	if err := os.WriteFile(path, []byte("0"), 0o644); err != nil {
		t.Fatal(err)
	}
	startNodelet(t)
	testutil.WaitFor(t, 10*time.Second, "vm.overcommit_memory=1", func() (bool, string) {
		raw, err := os.ReadFile(path)
		return err == nil && strings.TrimSpace(string(raw)) == "1", string(raw)
	})
}
