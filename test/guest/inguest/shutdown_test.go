//go:build guestvm

package inguest

import (
	"encoding/json"
	"fmt"
	"os"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/nodelet/nodelet/internal/testutil"
)

const (
	loginDest  = "org.freedesktop.login1"
	loginPath  = "/org/freedesktop/login1"
	loginIface = "org.freedesktop.login1.Manager"
	// The drop-in nodelet writes to raise logind's InhibitDelayMaxSec, where upstream does.
	logindDropIn  = "/etc/systemd/logind.conf.d/99-kubelet.conf"
	shutdownGrace = 20 * time.Second
)

// TestGracefulShutdownThroughLogind runs nodelet with shutdownGracePeriod under the guest's
// real systemd-logind: nodelet raises logind's InhibitDelayMaxSec to the grace period and
// holds a delay inhibitor lock on shutdown. PrepareForShutdown(true) is then sent on the
// system bus as logind sends it when a shutdown begins (upstream's e2e test emits it the same
// way, so the guest does not power off under the test): the pod is terminated within the
// grace period and marked Failed, reason Terminated, and the lock is released; a cancellation
// (PrepareForShutdown(false)) takes it again.
func TestGracefulShutdownThroughLogind(t *testing.T) {
	useDriver(t, "systemd")
	t.Cleanup(func() {
		_ = os.Remove(logindDropIn)
		_, _ = execOut("systemctl", "kill", "-s", "HUP", "systemd-logind")
	})
	n := startNodelet(t, "cgroupDriver: systemd\nshutdownGracePeriod: 20s\nshutdownGracePeriodCriticalPods: 10s\n")
	n.writeManifest("victim", staticPod("victim", burstableResources, "sleep 3600", "Always"))
	n.waitRunning("victim")

	if got := busProperty(t, "InhibitDelayMaxUSec"); got != float64(shutdownGrace.Microseconds()) {
		t.Errorf("logind's InhibitDelayMaxUSec = %v, want %d", got, shutdownGrace.Microseconds())
	}
	pid := n.cmd.Process.Pid
	testutil.WaitFor(t, time.Minute, "nodelet's delay lock in logind", func() (bool, string) {
		locks := inhibitors(t)
		return holdsDelayLock(locks, pid), fmt.Sprintf("%v", locks)
	})

	emitPrepareForShutdown(t, true)
	start := time.Now()
	pod := n.waitPod("victim", "terminated by the shutdown", func(p *v1.Pod) bool {
		cs := p.Status.ContainerStatuses
		return p.Status.Phase == v1.PodFailed && len(cs) > 0 && cs[0].State.Terminated != nil
	})
	took := time.Since(start)
	t.Logf("the pod was terminated %v after PrepareForShutdown", took.Round(time.Second))
	if took > shutdownGrace {
		t.Errorf("the pod took %v to terminate, past the %v grace period", took, shutdownGrace)
	}
	if pod.Status.Reason != "Terminated" || pod.Status.Message != "Pod was terminated in response to imminent node shutdown." {
		t.Errorf("pod status reason %q, message %q; want upstream's shutdown reason and message", pod.Status.Reason, pod.Status.Message)
	}
	testutil.WaitFor(t, time.Minute, "nodelet's lock released", func() (bool, string) {
		locks := inhibitors(t)
		return !holdsDelayLock(locks, pid), fmt.Sprintf("%v", locks)
	})

	emitPrepareForShutdown(t, false)
	testutil.WaitFor(t, time.Minute, "the lock taken again after the cancellation", func() (bool, string) {
		locks := inhibitors(t)
		return holdsDelayLock(locks, pid), fmt.Sprintf("%v", locks)
	})
}

// busJSON calls busctl --json=short with args and decodes its "data".
func busJSON(t *testing.T, out any, args ...string) {
	t.Helper()
	b, err := execOut("busctl", append([]string{"--json=short"}, args...)...)
	if err != nil {
		t.Fatalf("busctl %v: %v\n%s", args, err, b)
	}
	var reply struct{ Data json.RawMessage }
	if err := json.Unmarshal([]byte(b), &reply); err != nil {
		t.Fatalf("busctl %v: %v\n%s", args, err, b)
	}
	if err := json.Unmarshal(reply.Data, out); err != nil {
		t.Fatalf("busctl %v data: %v\n%s", args, err, b)
	}
}

func busProperty(t *testing.T, name string) float64 {
	var v float64
	busJSON(t, &v, "get-property", loginDest, loginPath, loginIface, name)
	return v
}

// inhibitors lists logind's locks: what, who, why, mode, uid, pid.
func inhibitors(t *testing.T) [][]any {
	var data [][][]any
	busJSON(t, &data, "call", loginDest, loginPath, loginIface, "ListInhibitors")
	if len(data) != 1 {
		t.Fatalf("ListInhibitors returned %v", data)
	}
	return data[0]
}

// holdsDelayLock says whether pid holds a delay lock on shutdown named as upstream's.
func holdsDelayLock(locks [][]any, pid int) bool {
	for _, l := range locks {
		if len(l) == 6 && l[0] == "shutdown" && l[1] == "kubelet" && l[3] == "delay" && l[5] == float64(pid) {
			return true
		}
	}
	return false
}

func emitPrepareForShutdown(t *testing.T, active bool) {
	t.Helper()
	if out, err := execOut("busctl", "emit", loginPath, loginIface, "PrepareForShutdown", "b", fmt.Sprint(active)); err != nil {
		t.Fatalf("emitting PrepareForShutdown(%v): %v\n%s", active, err, out)
	}
}
