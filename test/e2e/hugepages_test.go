//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// node0HugePages2Mi is where NUMA node 0's 2Mi huge page pool is sized, as the upstream node
// suite sizes it.
const node0HugePages2Mi = "/sys/devices/system/node/node0/hugepages/hugepages-2048kB/nr_hugepages"

// setHugePages2Mi sizes NUMA node 0's pool of 2Mi pages to n and gives them back to the kernel
// when the test ends.
func setHugePages2Mi(t *testing.T, n int) {
	t.Helper()
	write := func(n int) error { return os.WriteFile(node0HugePages2Mi, []byte(fmt.Sprint(n)), 0o644) }
	if err := write(n); err != nil {
		t.Fatalf("sizing the 2Mi huge page pool: %v", err)
	}
	t.Cleanup(func() {
		if err := write(0); err != nil {
			t.Errorf("giving the 2Mi huge pages back: %v", err)
		}
	})
	got, err := os.ReadFile(node0HugePages2Mi)
	if err != nil || strings.TrimSpace(string(got)) != fmt.Sprint(n) {
		t.Fatalf("the kernel gave %q 2Mi pages (%v), want %d", got, err, n)
	}
}

// hugePagesPodYAML is the Guaranteed pod of guaranteedPodYAML also asking for 2Mi huge pages,
// with an emptyDir of medium HugePages-2Mi at /hugepages.
func hugePagesPodYAML(name, hugepages string) string {
	pod := strings.Replace(guaranteedPodYAML(name, "64Mi"), "memory: 64Mi}", "memory: 64Mi, hugepages-2Mi: "+hugepages+"}", 1)
	return pod + `    volumeMounts:
    - {name: huge, mountPath: /hugepages}
  volumes:
  - name: huge
    emptyDir: {medium: HugePages-2Mi}
`
}

// TestMemoryManagerGivesHugePages: with 4 huge pages of 2Mi on NUMA node 0, a Guaranteed pod
// asking for 4Mi of them runs with a hugetlbfs of 2Mi pages at its HugePages-2Mi emptyDir, the
// memory manager's state records its huge page block on node 0, and a pod asking for more than
// is left is refused by the memory manager.
func TestMemoryManagerGivesHugePages(t *testing.T) {
	setHugePages2Mi(t, 4)
	cfgFile := t.TempDir() + "/config.yaml"
	if err := os.WriteFile(cfgFile, []byte(memoryManagerConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	n := startNodelet(t, "--config="+cfgFile)
	n.writeManifest("huge.yaml", hugePagesPodYAML("huge", "4Mi"))
	huge := waitRunning(t, "huge", "main", 60*time.Second)

	mounts := execOut(t, huge.Id, "cat", "/proc/mounts")
	if !strings.Contains(mounts, "/hugepages hugetlbfs") || !strings.Contains(mounts, "pagesize=2M") {
		t.Errorf("no hugetlbfs of 2Mi pages at /hugepages in the container:\n%s", mounts)
	}
	uid := huge.Labels["io.kubernetes.pod.uid"]
	var hugeBlock *memoryStateBlock
	for _, b := range readMemoryState(t, n.rootDir).Entries[uid]["main"] {
		if b.Type == "hugepages-2Mi" {
			hugeBlock = &b
		}
	}
	if hugeBlock == nil || hugeBlock.Size != 4<<20 || len(hugeBlock.NUMAAffinity) != 1 || hugeBlock.NUMAAffinity[0] != 0 {
		t.Errorf("huge page block in the state file = %+v, want 4Mi of hugepages-2Mi on node 0", hugeBlock)
	}

	n.writeManifest("more.yaml", hugePagesPodYAML("more", "6Mi"))
	waitMemoryManagerRefusal(t, n, "more")
}
