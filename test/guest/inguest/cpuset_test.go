//go:build guestvm

package inguest

import (
	"fmt"
	"testing"

	"github.com/nodelet/nodelet/internal/testutil"
)

const (
	// The static CPU policy with CPU 0 reserved for the system, as upstream's e2e tests
	// reserve it, and the Static memory manager, whose reservation on the one NUMA node must
	// be what allocatable holds back: here only the default hard eviction threshold, 100Mi.
	resourceManagersConfig = "cgroupDriver: systemd\ncpuManagerPolicy: static\nreservedSystemCPUs: \"0\"\n" +
		"memoryManagerPolicy: Static\nreservedMemory: [{numaNode: 0, limits: {memory: 100Mi}}]\n"
	wholeCPUResources = `    resources:
      requests: {cpu: "1", memory: 64Mi}
      limits: {cpu: "1", memory: 64Mi}
`
	// No CPU request: the node's one allocatable CPU is the Guaranteed pod's.
	memoryOnlyResources = `    resources:
      requests: {memory: 32Mi}
`
)

// TestCPUAndMemoryManagersPinGuaranteedContainer runs the static CPU manager and the Static
// memory manager on the guest's 2 vCPUs and one NUMA node: a Guaranteed container asking for
// one whole CPU gets CPU 1 to itself in its scope's cpuset.cpus, no CFS quota
// (DisableCPUQuotaWithExclusiveCPUs) and its memory pinned to node 0 in cpuset.mems; a
// Burstable container is left the shared pool, CPU 0.
func TestCPUAndMemoryManagersPinGuaranteedContainer(t *testing.T) {
	useDriver(t, "systemd")
	n := startNodelet(t, resourceManagersConfig)
	n.writeManifest("pinned", staticPod("pinned", wholeCPUResources, "sleep 3600", "Always"))
	pinned := containerCgroup(t, n.waitRunning("pinned"))
	n.writeManifest("shared", staticPod("shared", memoryOnlyResources, "sleep 3600", "Always"))
	shared := containerCgroup(t, n.waitRunning("shared"))

	expectCgroupFiles(t, pinned, map[string]string{
		"cpuset.cpus": "1", "cpuset.cpus.effective": "1", "cpuset.mems": "0", "cpu.max": "max 100000",
	})
	// The reconcile loop (cpuManagerReconcilePeriod, 10s) keeps the shared pool current.
	testutil.WaitFor(t, podTimeout, "the Burstable container on the shared pool", func() (bool, string) {
		cpus, eff := readCgroup(t, shared, "cpuset.cpus"), readCgroup(t, shared, "cpuset.cpus.effective")
		return cpus == "0" && eff == "0", fmt.Sprintf("%s cpuset.cpus %q, effective %q", shared, cpus, eff)
	})
}
