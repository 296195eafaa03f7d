package app

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nodelet/nodelet/internal/sysctl"
)

// TestMain points the kernel tunables at a scratch copy: unit tests must not change the host.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "nodelet-procsys")
	if err != nil {
		panic(err)
	}
	for _, s := range sysctl.KubeletDefaults {
		path := filepath.Join(dir, s.Name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			panic(err)
		}
		if err := os.WriteFile(path, []byte(strconv.Itoa(s.Value-1)), 0o644); err != nil {
			panic(err)
		}
	}
	procSys = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func TestProtectKernelDefaultsRefusesDifferingTunables(t *testing.T) {
	if err := os.WriteFile(filepath.Join(procSys, "vm/overcommit_memory"), []byte("0"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, _, _ := testConfig(t, "--protect-kernel-defaults")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := Run(ctx, cfg)
	if err == nil || !strings.Contains(err.Error(), "invalid kernel flag: vm/overcommit_memory, expected value: 1, actual value: 0") {
		t.Fatalf("Run with protectKernelDefaults and overcommit_memory 0: %v", err)
	}
}

func TestKernelTunablesAreSetAtStart(t *testing.T) {
	if err := os.WriteFile(filepath.Join(procSys, "vm/overcommit_memory"), []byte("0"), 0o644); err != nil {
		t.Fatal(err)
	}
	startNode(t)
	eventually(t, "overcommit_memory set to 1", func() bool {
		raw, _ := os.ReadFile(filepath.Join(procSys, "vm/overcommit_memory"))
		return strings.TrimSpace(string(raw)) == "1"
	})
}
