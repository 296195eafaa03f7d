//go:build guestvm

package inguest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodelet/nodelet/internal/testutil"
)

// TestLimitedSwapOfBurstableAPIPod turns on a 512Mi swap file and joins the kubelet, with
// LimitedSwap, to the guest's control plane. A Burstable API pod asking 512Mi of memory (limit
// 520Mi) gets, in its container's memory.swap.max, its request's share of the swap as upstream
// 1.33 computes it: request / MemTotal × SwapTotal, the machine's figures from /proc/meminfo (the
// kernel keeps it in whole pages).
// It uses it: its container comes to hold 560Mi, 40Mi over its limit, and runs on with part of
// it in swap (memory.swap.current) instead of being OOM-killed. A Guaranteed API pod gets no swap.
func TestLimitedSwapOfBurstableAPIPod(t *testing.T) {
	useDriver(t, "systemd")
	swapOn(t, 512)
	cs, kubeconfig := startControlPlane(t)
	joinKubelet(t, cs, kubeconfig, "cgroupDriver: systemd\nfailSwapOn: false\nmemorySwap: {swapBehavior: LimitedSwap}\n",
		"swapper", "guaranteed")
	ctx := context.Background()
	pods := cs.CoreV1().Pods("default")

	request := int64(512 << 20)
	// 28 dd buffers of 20Mi each held by a sleep that never reads its pipe, one a second:
	// emulated swap-out keeps up with that, not with one buffer of 560Mi at once.
	swapper := apiPod("swapper", "for i in $(seq 28); do dd if=/dev/zero bs=20M count=1 2>/dev/null | sleep 3600 & sleep 1; done; wait", nil)
	swapper.Spec.Containers[0].Resources = v1.ResourceRequirements{
		Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m"), v1.ResourceMemory: *resource.NewQuantity(request, resource.BinarySI)},
		Limits:   v1.ResourceList{v1.ResourceMemory: resource.MustParse("520Mi")},
	}
	for _, p := range []*v1.Pod{swapper, apiPod("guaranteed", "sleep 3600", cpuMem("100m", "64Mi"))} {
		if _, err := pods.Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	memTotal, swapTotal := meminfo(t, "MemTotal"), meminfo(t, "SwapTotal")
	share := int64(float64(request) / float64(memTotal) * float64(swapTotal))
	t.Logf("MemTotal %d, SwapTotal %d: a 512Mi request's share of the swap is %d bytes", memTotal, swapTotal, share)
	page := int64(os.Getpagesize())
	share = share / page * page // the kernel keeps memory.swap.max in whole pages

	g := waitAPIPod(t, cs, "guaranteed", "running", runningMain)
	if got := readCgroup(t, containerCgroup(t, g), "memory.swap.max"); got != "0" {
		t.Errorf("the Guaranteed API pod's memory.swap.max = %s, want 0", got)
	}
	s := waitAPIPod(t, cs, "swapper", "running", runningMain)
	scope := containerCgroup(t, s)
	if got := readCgroup(t, scope, "memory.swap.max"); got != strconv.FormatInt(share, 10) {
		t.Fatalf("the Burstable API pod's memory.swap.max = %s, want %d", got, share)
	}
	testutil.WaitFor(t, podTimeout, "the Burstable container's excess in swap", func() (bool, string) {
		ev, err := os.ReadFile(filepath.Join("/sys/fs/cgroup", scope, "memory.events"))
		if err != nil || hasPositive(string(ev), "oom_kill") {
			t.Fatalf("the Burstable container was OOM-killed although its excess fits its swap (%v): memory.events\n%s", err, ev)
		}
		cur := readCgroup(t, scope, "memory.swap.current")
		n, _ := strconv.ParseInt(cur, 10, 64)
		return n >= 32<<20, fmt.Sprintf("memory.swap.current %s, memory.current %s", cur, readCgroup(t, scope, "memory.current"))
	})
	s, err := pods.Get(ctx, "swapper", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !runningMain(s) || s.Status.ContainerStatuses[0].RestartCount != 0 {
		t.Errorf("the Burstable pod with its excess in swap: phase %s, containers %+v; want running", s.Status.Phase, s.Status.ContainerStatuses)
	}
}
