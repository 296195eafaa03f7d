package memorymanager

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
)

// writeFiles makes a fake file tree under root: path → content.
func writeFiles(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for path, content := range files {
		full := filepath.Join(root, path)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestReadNodesFromSysfs(t *testing.T) {
	root := t.TempDir()
	node := "devices/system/node/"
	writeFiles(t, root, map[string]string{
		node + "online":        "0-1\n",
		node + "node0/meminfo": "Node 0 MemTotal:       14772436 kB\nNode 0 MemFree:  8758240 kB\n",
		node + "node0/hugepages/hugepages-2048kB/nr_hugepages":    "4\n",
		node + "node0/hugepages/hugepages-1048576kB/nr_hugepages": "0\n",
		node + "node1/meminfo": "Node 1 MemTotal:       1024 kB\n",
	})
	got, err := ReadNodes(root, filepath.Join(root, "no-proc-meminfo"))
	if err != nil {
		t.Fatal(err)
	}
	want := []NUMAMemory{
		{ID: 0, Memory: 14772436 * 1024, HugePages: map[v1.ResourceName]uint64{"hugepages-2Mi": 4 << 21, "hugepages-1Gi": 0}},
		{ID: 1, Memory: 1 << 20, HugePages: map[v1.ResourceName]uint64{}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ReadNodes = %+v, want %+v", got, want)
	}
}

func TestReadNodesWithoutNUMAIsOneNode(t *testing.T) {
	root := t.TempDir()
	writeFiles(t, root, map[string]string{"meminfo": "MemTotal:       2048 kB\nMemFree: 1 kB\n"})
	got, err := ReadNodes(root, filepath.Join(root, "meminfo"))
	if err != nil || len(got) != 1 || got[0].ID != 0 || got[0].Memory != 2<<20 {
		t.Errorf("ReadNodes = %+v, %v; want node 0 with 2Mi", got, err)
	}
}
