package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/nodelet/nodelet/internal/config"
	"github.com/nodelet/nodelet/internal/lib/version"
)

// fakeRun records the configuration nodelet would have started with.
type fakeRun struct {
	calls int
	cfg   *config.Config
	ctx   context.Context
	err   error
}

func (f *fakeRun) run(ctx context.Context, cfg *config.Config) error {
	f.calls++
	f.ctx, f.cfg = ctx, cfg
	return f.err
}

func runCommand(t *testing.T, fake *fakeRun, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := newRootCommand(fake.run, &out, &errOut)
	code = execute(context.Background(), cmd, args, &errOut)
	return code, out.String(), errOut.String()
}

func TestBadConfigExitsOneNamingTheField(t *testing.T) {
	fake := &fakeRun{}
	code, _, stderr := runCommand(t, fake, "--max-pods=-1", "--hostname-override=node-a")
	if code != 1 {
		t.Errorf("exit code = %d, want 1", code)
	}
	if !strings.Contains(stderr, "invalid configuration: maxPods: must be >= 0, got -1") {
		t.Errorf("stderr = %q, want the maxPods error", stderr)
	}
	if fake.calls != 0 {
		t.Error("nodelet was started despite the bad configuration")
	}
}

func TestVersionPrintsVersion(t *testing.T) {
	fake := &fakeRun{}
	code, stdout, _ := runCommand(t, fake, "version")
	if code != 0 || strings.TrimSpace(stdout) != version.String() {
		t.Errorf("code = %d, stdout = %q, want %q", code, stdout, version.String())
	}
	if fake.calls != 0 {
		t.Error("version started nodelet")
	}
}

func TestVersionFlagPrintsKubernetesVersion(t *testing.T) {
	fake := &fakeRun{}
	code, stdout, _ := runCommand(t, fake, "--version")
	if code != 0 || strings.TrimSpace(stdout) != "Kubernetes "+version.KubeletVersion || fake.calls != 0 {
		t.Errorf("code = %d, stdout = %q, calls %d; want Kubernetes %s and no start", code, stdout, fake.calls, version.KubeletVersion)
	}
}

func TestHelpListsFlags(t *testing.T) {
	code, stdout, _ := runCommand(t, &fakeRun{}, "--help")
	if code != 0 {
		t.Errorf("exit code = %d", code)
	}
	for _, want := range []string{"standalone", "--kubeconfig", "--pod-manifest-path", "--manifest-url-header", "--max-pods", "-v, --v"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("help does not mention %q", want)
		}
	}
}

func TestRunGetsCompletedConfig(t *testing.T) {
	fake := &fakeRun{}
	code, _, stderr := runCommand(t, fake, "--pod-manifest-path=/etc/nodelet/manifests",
		"--hostname-override=Node-A", "--root-dir=/tmp/nodelet-root", "--max-pods=12")
	if code != 0 {
		t.Fatalf("exit code = %d, stderr = %q", code, stderr)
	}
	if fake.calls != 1 || fake.ctx == nil {
		t.Fatalf("run called %d times", fake.calls)
	}
	cfg := fake.cfg
	if cfg.NodeName != "node-a" || cfg.RootDir != "/tmp/nodelet-root" || cfg.Kubeconfig != "" ||
		cfg.Kubelet.StaticPodPath != "/etc/nodelet/manifests" || cfg.Kubelet.MaxPods != 12 {
		t.Errorf("unexpected config: %+v", cfg)
	}
}

func TestRunErrorExitsOne(t *testing.T) {
	fake := &fakeRun{err: errors.New("runtime unreachable")}
	code, _, stderr := runCommand(t, fake, "--hostname-override=node-a")
	if code != 1 || !strings.Contains(stderr, "runtime unreachable") {
		t.Errorf("code = %d, stderr = %q", code, stderr)
	}
}

func TestUnknownFlagAndArgs(t *testing.T) {
	code, _, stderr := runCommand(t, &fakeRun{}, "--no-such-flag")
	if code != 1 || !strings.Contains(stderr, "unknown flag: --no-such-flag") || !strings.Contains(stderr, "--help") {
		t.Errorf("code = %d, stderr = %q", code, stderr)
	}
	code, _, _ = runCommand(t, &fakeRun{}, "stray-argument")
	if code != 1 {
		t.Errorf("a stray argument gave exit code %d", code)
	}
	// Root flags are not inherited by subcommands.
	code, _, _ = runCommand(t, &fakeRun{}, "version", "--max-pods=3")
	if code != 1 {
		t.Errorf("version accepted a root flag, exit code %d", code)
	}
}
