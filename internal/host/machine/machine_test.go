package machine

import (
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"syscall"
	"testing"

	v1 "k8s.io/api/core/v1"
)

// writeTree writes files (path relative to root → content).
func writeTree(t *testing.T, root string, files map[string]string) {
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

func testPaths(root string, cpus int) MachinePaths {
	return MachinePaths{
		Proc: filepath.Join(root, "proc"), Sys: filepath.Join(root, "sys"),
		Etc: filepath.Join(root, "etc"), Cgroup: filepath.Join(root, "cgroup"),
		NumCPU: func() int { return cpus },
	}
}

func TestReadMachineFromFiles(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{
		"proc/meminfo":                   "MemTotal:        8048560 kB\nMemFree:         1000 kB\nSwapTotal:       2000000 kB\n",
		"proc/sys/kernel/random/boot_id": "b00t-1d\n",
		"proc/sys/kernel/osrelease":      "6.1.0-18-amd64\n",
		"proc/self/cgroup":               "12:memory:/system.slice/nodelet.service\n4:cpu,cpuset:/system.slice/nodelet.service\n0::/system.slice/nodelet.service\n",
		"cgroup/cpuset/system.slice/nodelet.service/cpuset.cpus":   "0,2\n",
		"sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages":    "0\n",
		"sys/kernel/mm/hugepages/hugepages-1048576kB/nr_hugepages": "2\n",
		"etc/machine-id": "abc123\n",
		"etc/os-release": "NAME=\"Debian GNU/Linux\"\nPRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\n",
	})
	m, err := ReadMachine(testPaths(root, 4))
	if err != nil {
		t.Fatal(err)
	}
	want := Machine{
		CPUs: 2, MemoryBytes: 8048560 * 1024, SwapBytes: 2000000 * 1024,
		MachineID: "abc123", SystemUUID: "abc123", BootID: "b00t-1d", KernelVersion: "6.1.0-18-amd64",
		OSImage: "Debian GNU/Linux 12 (bookworm)", OperatingSystem: runtime.GOOS, Architecture: runtime.GOARCH,
	}
	hp := m.HugePages
	m.HugePages = nil
	if !reflect.DeepEqual(*m, want) {
		t.Errorf("machine = %+v\nwant %+v", *m, want)
	}
	if len(hp) != 2 || hp["hugepages-2Mi"] != 0 || hp["hugepages-1Gi"] != 2<<30 {
		t.Errorf("huge pages = %v, want hugepages-2Mi: 0 and hugepages-1Gi: 2Gi", hp)
	}
}

func TestReadMachinePrefersProductUUIDAndCgroupV2Cpuset(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{
		"proc/meminfo":                                "MemTotal: 1024 kB\n",
		"proc/sys/kernel/random/boot_id":              "b\n",
		"proc/sys/kernel/osrelease":                   "6.1\n",
		"proc/self/cgroup":                            "0::/kubepods.slice\n",
		"cgroup/kubepods.slice/cpuset.cpus.effective": "0-2\n",
		"sys/class/dmi/id/product_uuid":               "4C4C4544-0000\n",
		"etc/machine-id":                              "mid\n",
		"etc/os-release":                              "PRETTY_NAME='Custom OS'\n",
	})
	m, err := ReadMachine(testPaths(root, 8))
	if err != nil {
		t.Fatal(err)
	}
	if m.CPUs != 3 || m.SystemUUID != "4C4C4544-0000" || m.OSImage != "Custom OS" || m.HugePages != nil {
		t.Errorf("machine = %+v, want 3 CPUs, the product UUID, OS image Custom OS, no huge pages", m)
	}
}

func TestReadMachineWiderCpusetDoesNotRaiseCount(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{
		"proc/self/cgroup":             "0::/\n",
		"cgroup/cpuset.cpus.effective": "0-15\n",
	})
	m, err := ReadMachine(testPaths(root, 2))
	if err == nil {
		t.Error("no error although most facts are missing")
	}
	if m == nil || m.CPUs != 2 || m.OperatingSystem != runtime.GOOS {
		t.Errorf("machine = %+v, want the scheduler's 2 CPUs and the OS filled in", m)
	}
}

func TestCountCPUList(t *testing.T) {
	for list, want := range map[string]int{"0": 1, "0-3": 4, "0-3,8,10-11": 7} {
		if got, err := countCPUList(list); err != nil || got != want {
			t.Errorf("countCPUList(%q) = %d, %v; want %d", list, got, err, want)
		}
	}
	for _, bad := range []string{"", "x", "3-1"} {
		if _, err := countCPUList(bad); err == nil {
			t.Errorf("countCPUList(%q) accepted", bad)
		}
	}
}

func TestFilesystemCapacity(t *testing.T) {
	p := MachinePaths{Statfs: func(path string, st *syscall.Statfs_t) error {
		if path != "/var/lib/kubelet" {
			t.Errorf("statfs of %q", path)
		}
		st.Bsize, st.Blocks = 4096, 1000
		return nil
	}}
	if got, err := p.FilesystemCapacity("/var/lib/kubelet"); err != nil || got != 4096*1000 {
		t.Errorf("FilesystemCapacity = %d, %v", got, err)
	}
}

func TestReadMachineOnThisHost(t *testing.T) {
	m, err := ReadMachine(HostPaths())
	if err != nil {
		t.Logf("partial machine facts: %v", err)
	}
	if m.CPUs < 1 || m.MemoryBytes <= 0 || m.BootID == "" || m.KernelVersion == "" {
		t.Errorf("machine = %+v", m)
	}
}

func TestAllocatableNeverNegative(t *testing.T) {
	capacity := Capacity(&Machine{CPUs: 1, MemoryBytes: 1 << 30}, 10, 1<<30)
	reserved, err := Reservation(capacity, map[string]string{"cpu": "2", "pid": "1000"}, nil,
		map[string]string{"memory.available": "50%", "nodefs.available": "2Gi", "imagefs.available": "15%"})
	if err != nil {
		t.Fatal(err)
	}
	got := map[v1.ResourceName]string{}
	for name, q := range Allocatable(capacity, reserved) {
		got[name] = q.String()
	}
	want := map[v1.ResourceName]string{"cpu": "0", "memory": "512Mi", "pods": "10", "ephemeral-storage": "0"}
	for name, q := range want {
		if got[name] != q {
			t.Errorf("allocatable %s = %s, want %s", name, got[name], q)
		}
	}
	if len(got) != len(want) {
		t.Errorf("allocatable = %v, want only %v", got, want)
	}
}
