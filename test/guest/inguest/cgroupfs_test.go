//go:build guestvm

package inguest

import (
	"strings"
	"testing"
)

// TestCgroupfsDriverOnV2 runs a Guaranteed and a Burstable pod with cgroupDriver cgroupfs on
// cgroup v2 (containerd's runc without SystemdCgroup): the cgroups are plain directories
// named as upstream's (/kubepods/pod<uid>, /kubepods/burstable/pod<uid>), each container's
// cgroup is inside its pod's, and the limits are in the v2 files.
func TestCgroupfsDriverOnV2(t *testing.T) {
	useDriver(t, "cgroupfs")
	n := startNodelet(t, "cgroupDriver: cgroupfs\npodPidsLimit: "+podPidsLimit+"\n")
	n.writeManifest("guaranteed", staticPod("guaranteed", guaranteedResources, "sleep 3600", "Always"))
	n.writeManifest("burstable", staticPod("burstable", burstableResources, "sleep 3600", "Always"))
	guaranteed, burstable := n.waitRunning("guaranteed"), n.waitRunning("burstable")

	gcg := "/kubepods/pod" + string(guaranteed.UID)
	expectCgroupFiles(t, gcg, map[string]string{
		"cpu.max": "50000 100000", "cpu.weight": guaranteedWeight,
		"memory.max": "67108864", "pids.max": podPidsLimit,
	})
	// 100m is 102 shares: weight 1 + 100*9999/262142.
	bcg := "/kubepods/burstable/pod" + string(burstable.UID)
	expectCgroupFiles(t, bcg, map[string]string{
		"cpu.max": "max 100000", "cpu.weight": "4", "memory.max": "max", "pids.max": podPidsLimit,
	})
	for cg, pod := range map[string]string{gcg: "guaranteed", bcg: "burstable"} {
		p := guaranteed
		if pod == "burstable" {
			p = burstable
		}
		id := strings.TrimPrefix(p.Status.ContainerStatuses[0].ContainerID, "containerd://")
		if got := containerCgroup(t, p); got != cg+"/"+id {
			t.Errorf("pod %s's container runs in %s, want %s", pod, got, cg+"/"+id)
		}
	}
	expectCgroupFiles(t, containerCgroup(t, guaranteed), map[string]string{
		"cpu.max": "50000 100000", "memory.max": "67108864",
	})
}
