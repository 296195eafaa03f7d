package memorymanager

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"
)

// goldenFile was written by the real upstream kubelet v1.33.4 (testdata/make-golden.sh): Static
// policy, one Guaranteed pod with containers app (64Mi) and helper (32Mi).
const goldenFile = "testdata/upstream_memory_manager_state"

// TestUpstreamStateFileReadsAndWritesBack checks nodelet against upstream's own file: its
// checksum verifies, the same state written by nodelet is the same bytes, and a memory manager
// on the same machine takes it over with the pod's blocks.
func TestUpstreamStateFileReadsAndWritesBack(t *testing.T) {
	golden, err := os.ReadFile(goldenFile)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, StateFile), golden, 0o644); err != nil {
		t.Fatal(err)
	}
	f, found, err := readState(dir, PolicyStatic)
	if err != nil || !found {
		t.Fatalf("reading upstream's file: found %v, %v", found, err)
	}
	again := t.TempDir()
	if err := writeState(again, PolicyStatic, f.MachineState, f.Entries); err != nil {
		t.Fatal(err)
	}
	written, _ := os.ReadFile(filepath.Join(again, StateFile))
	if !bytes.Equal(written, golden) {
		t.Errorf("nodelet writes the same state as\n%s\nupstream wrote\n%s", written, golden)
	}

	m, err := New(goldenOptions(t, f, dir))
	if err != nil {
		t.Fatalf("taking over upstream's state: %v", err)
	}
	var uid string
	for id := range f.Entries {
		uid = id
	}
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid)}}
	for _, name := range []string{"app", "helper"} {
		if got := m.CreatingContainer(pod, &v1.Container{Name: name}); got != "0" {
			t.Errorf("container %s pinned to %q, want 0 as upstream placed it", name, got)
		}
	}
	tampered := bytes.Replace(golden, []byte(`"size":67108864`), []byte(`"size":67108865`), 1)
	if bytes.Equal(tampered, golden) {
		t.Fatal("the golden file has no 64Mi block to tamper with")
	}
	if err := os.WriteFile(filepath.Join(dir, StateFile), tampered, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := readState(dir, PolicyStatic); err == nil {
		t.Errorf("a tampered upstream file was accepted")
	}
}

// goldenOptions rebuilds the machine the golden file was written on from its own totals and
// reservations.
func goldenOptions(t *testing.T, f *stateFile, dir string) Options {
	t.Helper()
	opts := Options{Policy: PolicyStatic, StateDir: dir, NodeReservation: v1.ResourceList{}}
	for id, n := range f.MachineState {
		node := NUMAMemory{ID: id, HugePages: map[v1.ResourceName]uint64{}}
		limits := v1.ResourceList{}
		for name, table := range n.MemoryMap {
			if name == v1.ResourceMemory {
				node.Memory = table.TotalMemSize
			} else {
				node.HugePages[name] = table.TotalMemSize
			}
			if table.SystemReserved > 0 {
				q := *resource.NewQuantity(int64(table.SystemReserved), resource.BinarySI)
				limits[name] = q
				total := opts.NodeReservation[name]
				total.Add(q)
				opts.NodeReservation[name] = total
			}
		}
		opts.Nodes = append(opts.Nodes, node)
		opts.Reserved = append(opts.Reserved, kubeletconfigv1beta1.MemoryReservation{NumaNode: int32(id), Limits: limits})
	}
	return opts
}
