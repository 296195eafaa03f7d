package app

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nodelet/nodelet/internal/host/sysctl"
	"github.com/nodelet/nodelet/internal/testutil"
)

const swapsHeader = "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n"

// TestMain points the host's kernel files at scratch copies: unit tests must not change the host.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "nodelet-host")
	if err != nil {
		panic(err)
	}
	hostFiles.procSys = filepath.Join(dir, "sys")
	for _, s := range sysctl.KubeletDefaults {
		mustWrite(filepath.Join(hostFiles.procSys, s.Name), strconv.Itoa(s.Value-1))
	}
	hostFiles.swaps = filepath.Join(dir, "swaps")
	mustWrite(hostFiles.swaps, swapsHeader)
	hostFiles.oomScoreAdj = filepath.Join(dir, "oom_score_adj")
	mustWrite(hostFiles.oomScoreAdj, "0")
	hostFiles.cgroupRoot = filepath.Join(dir, "cgroup")
	mustWrite(filepath.Join(hostFiles.cgroupRoot, "cpu", "tasks"), "")
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func mustWrite(path, content string) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		panic(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		panic(err)
	}
}

func readHostFile(t *testing.T, path string) string {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(raw))
}

// runFails runs nodelet with extra flags and returns its start error.
func runFails(t *testing.T, extra ...string) error {
	t.Helper()
	cfg, _, _ := testConfig(t, extra...)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return Run(ctx, cfg)
}

func TestProtectKernelDefaultsRefusesDifferingTunables(t *testing.T) {
	mustWrite(filepath.Join(hostFiles.procSys, "vm/overcommit_memory"), "0")
	err := runFails(t, "--protect-kernel-defaults")
	if err == nil || !strings.Contains(err.Error(), "invalid kernel flag: vm/overcommit_memory, expected value: 1, actual value: 0") {
		t.Fatalf("Run with protectKernelDefaults and overcommit_memory 0: %v", err)
	}
}

func TestHostIsPreparedAtStart(t *testing.T) {
	mustWrite(filepath.Join(hostFiles.procSys, "vm/overcommit_memory"), "0")
	fake, dir := startNode(t, "--oom-score-adj=-998")
	writePod(t, dir, "web", "Always")
	testutil.Eventually(t, "web running", func() bool { return running(fake, "web") != nil })
	testutil.Eventually(t, "overcommit_memory and oom_score_adj set", func() bool {
		return readHostFile(t, filepath.Join(hostFiles.procSys, "vm/overcommit_memory")) == "1" &&
			readHostFile(t, hostFiles.oomScoreAdj) == "-998"
	})
}

func TestSwapOnRefusedUnlessFailSwapOnIsOff(t *testing.T) {
	mustWrite(hostFiles.swaps, swapsHeader+"/swapfile\tfile\t1048572\t0\t-2\n")
	defer mustWrite(hostFiles.swaps, swapsHeader)
	if err := runFails(t); err == nil || !strings.Contains(err.Error(), "swap is on") {
		t.Fatalf("Run with swap on: %v", err)
	}
	fake, dir := startNode(t, "--fail-swap-on=false")
	writePod(t, dir, "web", "Always")
	testutil.Eventually(t, "web running with swap on", func() bool { return running(fake, "web") != nil })
}

func TestFailCgroupV1RefusesAV1Host(t *testing.T) {
	cfg, _, _ := testConfig(t)
	cfg.FailCgroupV1 = true
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := Run(ctx, cfg); err == nil || !strings.Contains(err.Error(), "cgroup v1") {
		t.Fatalf("Run with failCgroupV1 on a v1 host: %v", err)
	}
}
