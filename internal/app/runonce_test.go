package app

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/nodelet/nodelet/internal/config"
	"github.com/nodelet/nodelet/internal/runtime/cri/fakecri"
)

// Run in run-once mode must return once its pods run: every component it started stops with it.
func TestRunOnceReturnsWhenPodsRun(t *testing.T) {
	fake, endpoint := fakecri.Start(t)
	fake.AddImage("busybox:1.36")
	dir := t.TempDir()
	manifests := filepath.Join(dir, "manifests")
	if err := os.MkdirAll(manifests, 0o755); err != nil {
		t.Fatal(err)
	}
	writePod(t, manifests, "once", "Always")
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	flags := config.AddFlags(fs)
	if err := fs.Parse([]string{
		"--runonce", "--pod-manifest-path=" + manifests, "--root-dir=" + filepath.Join(dir, "root"),
		"--container-runtime-endpoint=" + endpoint, "--hostname-override=node1", "--healthz-port=0",
		"--cgroups-per-qos=false", "--enforce-node-allocatable=none",
	}); err != nil {
		t.Fatal(err)
	}
	cfg, err := flags.Complete(fs)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Kubelet.PodLogsDir = filepath.Join(dir, "logs")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- Run(ctx, cfg) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("run-once did not return after its pod started")
	}
	if running(fake, "once") == nil {
		t.Error("the run-once pod is not running")
	}
}
