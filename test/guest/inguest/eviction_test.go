//go:build guestvm

package inguest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/nodelet/nodelet/internal/testutil"
)

// TestMemoryPressureSeenButStaticPodsSpared sets evictionHard memory.available 600Mi below
// what is available now, then a BestEffort static pod fills 1000Mi of memory-backed emptyDirs
// (two: each is sized by node allocatable, which the threshold shrinks below 1000Mi). nodelet
// reads the pressure from the guest's real memory figures (/stats/summary's node memory, the
// eviction manager's "threshold crossed") but evicts nothing: a static pod is critical, as
// upstream, and it is the only pod. Evicting an API pod needs a control plane in the guest.
func TestMemoryPressureSeenButStaticPodsSpared(t *testing.T) {
	useDriver(t, "systemd")
	available := memoryAvailable(t)
	threshold := (available - 600<<20) >> 20
	t.Logf("memory.available now %d MiB; threshold %d MiB", available>>20, threshold)
	n := startNodelet(t, fmt.Sprintf("cgroupDriver: systemd\nevictionHard: {memory.available: %dMi}\n"+
		"evictionPressureTransitionPeriod: 30s\n", threshold))
	n.writeManifest("hog", `apiVersion: v1
kind: Pod
metadata:
  name: hog
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: nodelet.local/busybox:1.36
    imagePullPolicy: Never
    command: ["sh", "-c", "for d in /a /b; do dd if=/dev/zero of=$d/data bs=1M count=500 || exit; done; sleep 3600"]
    volumeMounts: [{name: a, mountPath: /a}, {name: b, mountPath: /b}]
  volumes:
  - {name: a, emptyDir: {medium: Memory}}
  - {name: b, emptyDir: {medium: Memory}}
`)
	n.waitRunning("hog")
	testutil.WaitFor(t, podTimeout, "the summary's node memory below the threshold", func() (bool, string) {
		got, err := n.nodeMemoryAvailable()
		if err != nil {
			return false, err.Error()
		}
		return got < threshold<<20, fmt.Sprintf("%d MiB available", got>>20)
	})
	// Each kubelet says it in its own words.
	crossed, noVictim := `"Eviction manager: threshold crossed" signal="memory.available"`,
		`"Eviction manager: no pod to evict" signal="memory.available"`
	if subject == "kubelet" {
		crossed, noVictim = `"Eviction manager: attempting to reclaim" resourceName="memory"`,
			`"Eviction manager: unable to evict any pods from the node"`
	}
	testutil.WaitFor(t, time.Minute, "the eviction manager seeing the threshold crossed", func() (bool, string) {
		log := n.log()
		return strings.Contains(log, crossed) && strings.Contains(log, noVictim), "not logged yet"
	})
	pods, err := n.pods()
	if err != nil {
		t.Fatal(err)
	}
	if p := pods["hog"]; p.Status.Phase != v1.PodRunning {
		t.Errorf("the static pod is %s (%s: %s), want Running: static pods are critical", p.Status.Phase, p.Status.Reason, p.Status.Message)
	}
}

// nodeMemoryAvailable reads node.memory.availableBytes from nodelet's /stats/summary.
func (n *nodelet) nodeMemoryAvailable() (int64, error) {
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/stats/summary", n.roPort))
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var s struct {
		Node struct {
			Memory struct {
				AvailableBytes *int64 `json:"availableBytes"`
			} `json:"memory"`
		} `json:"node"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
		return 0, err
	}
	if s.Node.Memory.AvailableBytes == nil {
		return 0, fmt.Errorf("no node.memory.availableBytes in the summary")
	}
	return *s.Node.Memory.AvailableBytes, nil
}
