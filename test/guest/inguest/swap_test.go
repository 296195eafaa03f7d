//go:build guestvm

package inguest

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nodelet/nodelet/internal/testutil"
)

const swapFile = "/var/tmp/swapfile"

// TestSwapOnV2 turns on a 256Mi swap file in the guest: nodelet refuses to start by default
// (failSwapOn), and with failSwapOn false and LimitedSwap every static pod's container gets
// memory.swap.max 0, as upstream keeps critical pods (static ones are) and non-Burstable ones
// off swap. A Burstable API pod's share of the swap: TestLimitedSwapOfBurstableAPIPod.
func TestSwapOnV2(t *testing.T) {
	useDriver(t, "systemd")
	swapOn(t, 256)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "/usr/local/bin/"+subject, "--container-runtime-endpoint="+endpoint,
		"--root-dir="+t.TempDir(), "--hostname-override="+nodeName).CombinedOutput()
	named := strings.Contains(string(out), "failSwapOn") || strings.Contains(string(out), "fail-swap-on") // the upstream kubelet names the flag
	if err == nil || ctx.Err() != nil || !named {
		t.Errorf("%s with swap on and failSwapOn by default: %v (context %v), want a refusal naming failSwapOn; output:\n%s", subject,
			err, ctx.Err(), testutil.Tail(string(out), 3000))
	}

	n := startNodelet(t, "cgroupDriver: systemd\nfailSwapOn: false\nmemorySwap: {swapBehavior: LimitedSwap}\n")
	limited := `    resources:
      requests: {cpu: 100m, memory: 32Mi}
      limits: {memory: 128Mi}
`
	for name, res := range map[string]string{"burstable": limited, "guaranteed": guaranteedResources, "besteffort": ""} {
		n.writeManifest(name, staticPod(name, res, "sleep 3600", "Always"))
	}
	for _, name := range []string{"burstable", "guaranteed", "besteffort"} {
		scope := containerCgroup(t, n.waitRunning(name))
		if got := readCgroup(t, scope, "memory.swap.max"); got != "0" {
			t.Errorf("static pod %s: %s/memory.swap.max = %s, want 0", name, scope, got)
		}
	}
}

// swapOn makes and turns on a swap file of mib MiB (dd: swapon refuses fallocate's unwritten
// extents on some filesystems), off again at cleanup.
func swapOn(t *testing.T, mib int) {
	t.Helper()
	steps := [][]string{
		{"dd", "if=/dev/zero", "of=" + swapFile, "bs=1M", "count=" + strconv.Itoa(mib), "status=none"},
		{"chmod", "600", swapFile}, {"mkswap", swapFile}, {"swapon", swapFile},
	}
	for _, s := range steps {
		if out, err := execOut(s[0], s[1:]...); err != nil {
			t.Fatalf("%v: %v\n%s", s, err, out)
		}
	}
	t.Cleanup(func() {
		if out, err := execOut("swapoff", swapFile); err != nil {
			t.Errorf("swapoff: %v\n%s", err, out)
		}
		_ = os.Remove(swapFile)
	})
}
