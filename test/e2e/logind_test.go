//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cri "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodelet/nodelet/internal/testutil"
)

// The drop-in nodelet writes, where upstream writes it; fakelogind reads it on reload.
const logindDropIn = "/etc/systemd/logind.conf.d/99-kubelet.conf"

// Graceful node shutdown with systemd-logind on the system bus (test/fakelogind on a private
// dbus-daemon): nodelet raises logind's 5s InhibitDelayMaxSec to its 20s budget, holds a delay
// lock, and on PrepareForShutdown(true) terminates the pods, reports them and the Node as
// upstream does, and releases the lock while it keeps running; PrepareForShutdown(false) makes
// the node Ready again, takes the lock again and admits pods; a SIGTERM then leaves the pods
// running, as upstream.
func TestGracefulNodeShutdownThroughLogind(t *testing.T) {
	if _, err := os.Stat(logindDropIn); err == nil {
		t.Fatalf("%s exists already; this test would overwrite it", logindDropIn)
	}
	t.Cleanup(func() { os.Remove(logindDropIn) })
	t.Setenv("DBUS_SYSTEM_BUS_ADDRESS", startFakeLogind(t))
	bus, err := dbus.ConnectSystemBus()
	if err != nil {
		t.Fatal(err)
	}
	defer bus.Close()

	cfgFile := filepath.Join(t.TempDir(), "kubelet.yaml")
	if err := os.WriteFile(cfgFile, []byte(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
shutdownGracePeriod: 20s
shutdownGracePeriodCriticalPods: 5s
`), 0o644); err != nil {
		t.Fatal(err)
	}
	c := joinCluster(t, "--config="+cfgFile)
	c.waitReady(t)
	testutil.WaitFor(t, 30*time.Second, "nodelet's delay lock", func() (bool, string) {
		locks := inhibitors(t, bus)
		return len(locks) == 1 && locks[0].What == "shutdown" && locks[0].Who == "kubelet" && locks[0].Mode == "delay", flat(locks)
	})
	if d := inhibitDelay(t, bus); d != 20*time.Second {
		t.Errorf("logind's InhibitDelayMaxSec %v, want nodelet's override to 20s", d)
	}
	c.createPod(podSpec("web", "trap 'exit 0' TERM; while true; do sleep 0.2; done"))
	c.waitPodPhase("web", v1.PodRunning, 60*time.Second)

	emitPrepareForShutdown(t, bus, true)
	p := c.waitPodPhase("web", v1.PodFailed, 40*time.Second)
	if p.Status.Reason != "Terminated" || p.Status.Message != "Pod was terminated in response to imminent node shutdown." {
		t.Errorf("pod reason %q message %q", p.Status.Reason, p.Status.Message)
	}
	testutil.WaitFor(t, 30*time.Second, "the Node NotReady", func() (bool, string) {
		for _, cond := range c.node().Status.Conditions {
			if cond.Type == v1.NodeReady {
				return cond.Status == v1.ConditionFalse && strings.Contains(cond.Message, "node is shutting down"), cond.Message
			}
		}
		return false, "no Ready condition"
	})
	testutil.WaitFor(t, 30*time.Second, "the lock released", func() (bool, string) {
		locks := inhibitors(t, bus)
		return len(locks) == 0, flat(locks)
	})
	if err := c.cmd.Process.Signal(syscall.Signal(0)); err != nil {
		t.Fatalf("nodelet is gone after the logind signal: %v", err)
	}
	waitNodeEvent(t, c, "NodeShutdown", "Shutdown manager detected shutdown event")

	emitPrepareForShutdown(t, bus, false)
	testutil.WaitFor(t, 30*time.Second, "the Node Ready again", func() (bool, string) {
		return nodeReady(c.node()), "not Ready"
	})
	testutil.WaitFor(t, 30*time.Second, "the lock taken again", func() (bool, string) {
		locks := inhibitors(t, bus)
		return len(locks) == 1, flat(locks)
	})
	waitNodeEvent(t, c, "NodeShutdown", "Shutdown manager detected shutdown cancellation")
	c.createPod(podSpec("after", "sleep 3600"))
	c.waitPodPhase("after", v1.PodRunning, 60*time.Second)

	// With logind, a stop request stops nodelet only (a restart, not a node shutdown): the pod
	// keeps running.
	c.stop(syscall.SIGTERM)
	if cs := c.podContainers("after"); len(cs) != 1 || cs[0].State != cri.ContainerState_CONTAINER_RUNNING {
		t.Errorf("after nodelet's SIGTERM the pod's containers are %v, want one running", cs)
	}
}

// startFakeLogind builds and starts test/fakelogind and gives its bus address.
func startFakeLogind(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "fakelogind")
	if out, err := exec.Command("go", "build", "-o", bin, "../fakelogind").CombinedOutput(); err != nil {
		t.Fatalf("building test/fakelogind: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "-dir", t.TempDir())
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Signal(syscall.SIGTERM); cmd.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "DBUS_SYSTEM_BUS_ADDRESS=")
	if err != nil || !ok {
		t.Fatalf("fakelogind did not start: %q %v", line, err)
	}
	return addr
}

// inhibitor is one entry of logind's ListInhibitors.
type inhibitor struct {
	What, Who, Why, Mode string
	UID, PID             uint32
}

func inhibitors(t *testing.T, bus *dbus.Conn) []inhibitor {
	t.Helper()
	var out []inhibitor
	if err := bus.Object("org.freedesktop.login1", "/org/freedesktop/login1").
		Call("org.freedesktop.login1.Manager.ListInhibitors", 0).Store(&out); err != nil {
		t.Fatal(err)
	}
	return out
}

func flat(locks []inhibitor) string {
	var out []string
	for _, l := range locks {
		out = append(out, l.What+"/"+l.Who+"/"+l.Mode)
	}
	return fmt.Sprintf("%d locks: %s", len(locks), strings.Join(out, "; "))
}

func inhibitDelay(t *testing.T, bus *dbus.Conn) time.Duration {
	t.Helper()
	v, err := bus.Object("org.freedesktop.login1", "/org/freedesktop/login1").GetProperty("org.freedesktop.login1.Manager.InhibitDelayMaxUSec")
	if err != nil {
		t.Fatal(err)
	}
	return time.Duration(v.Value().(uint64)) * time.Microsecond
}

// emitPrepareForShutdown sends logind's signal as the upstream node suite does.
func emitPrepareForShutdown(t *testing.T, bus *dbus.Conn, active bool) {
	t.Helper()
	if err := bus.Emit("/org/freedesktop/login1", "org.freedesktop.login1.Manager.PrepareForShutdown", active); err != nil {
		t.Fatal(err)
	}
}

func waitNodeEvent(t *testing.T, c *cluster, reason, message string) {
	t.Helper()
	testutil.WaitFor(t, 30*time.Second, "event "+reason+": "+message, func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		evs, err := c.admin.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.kind=Node,reason=" + reason})
		if err != nil {
			return false, err.Error()
		}
		for _, e := range evs.Items {
			// A repeated event is the same object with a later lastTimestamp.
			if e.Message == message && !e.LastTimestamp.Time.Before(c.started.Truncate(time.Second)) {
				return true, ""
			}
		}
		return false, "not yet"
	})
}
