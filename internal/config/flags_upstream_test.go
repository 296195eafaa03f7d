package config

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// Every flag the upstream kubelet 1.33 has is a nodelet flag too (acted on, or refused by
// name at a value nodelet does not act on), and upstream's deprecated KubeletFlags and
// cAdvisor flags carry upstream's notice.
func TestEveryUpstreamFlagIsTaken(t *testing.T) {
	fs := pflag.NewFlagSet("nodelet", pflag.ContinueOnError)
	AddFlags(fs)
	if len(upstreamFlags) < 100 {
		t.Fatalf("only %d upstream flags in the generated table", len(upstreamFlags))
	}
	for _, name := range sortedKeys(upstreamFlags) {
		if name == "version" {
			continue // cmd/nodelet's own flag set has it
		}
		fl := fs.Lookup(name)
		if fl == nil {
			t.Errorf("--%s: an upstream kubelet flag nodelet does not take", name)
			continue
		}
		if notice := upstreamFlags[name].Deprecated; notice != "" && fl.Deprecated == "" && !strings.HasPrefix(notice, "This parameter should be set via the config file") {
			t.Errorf("--%s: deprecated upstream (%q) but not in nodelet", name, notice)
		}
	}
}

func TestCloudProvider(t *testing.T) {
	cfg := mustComplete(t, "--cloud-provider=external")
	if !cfg.ExternalCloudProvider {
		t.Error("--cloud-provider=external not recorded")
	}
	if cfg := mustComplete(t, "--cloud-provider="); cfg.ExternalCloudProvider {
		t.Error("empty --cloud-provider means none")
	}
	_, err := complete(t, "--cloud-provider=aws")
	want := `--cloud-provider: cloud provider "aws" was specified, but built-in cloud providers are disabled. Please set --cloud-provider=external and migrate to an external cloud provider`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("--cloud-provider=aws: %v, want %q", err, want)
	}
	mustComplete(t, "--cloud-provider=external", "--cloud-config=/etc/kubernetes/cloud.conf")
}

func TestDeprecatedFlags(t *testing.T) {
	if cfg := mustComplete(t); cfg.RegisterUnschedulable {
		t.Error("registered unschedulable by default")
	}
	if cfg := mustComplete(t, "--register-schedulable=false"); !cfg.RegisterUnschedulable {
		t.Error("--register-schedulable=false not acted on")
	}
	// Inert upstream without its alpha gate, so inert here.
	mustComplete(t, "--qos-reserved=memory=50%")
	// Upstream's defaults, however spelt, are accepted.
	mustComplete(t, "--housekeeping-interval=10s", "--global-housekeeping-interval=1m", "--enable-load-reader=false",
		"--containerd=/run/containerd/containerd.sock", "--experimental-allocatable-ignore-eviction=false", "--experimental-mounter-path=")
	for _, arg := range []string{"--housekeeping-interval=1s", "--enable-load-reader", "--machine-id-file=/etc/other",
		"--experimental-allocatable-ignore-eviction", "--experimental-mounter-path=/usr/bin/mount.helper",
		"--contention-profiling", "--cpu-cfs-quota-period=50ms",
		"--runtime-cgroups=/runtime.slice", "--log-text-split-stream", "--logging-format=json", "--volume-stats-agg-period=2m"} {
		name, _, _ := strings.Cut(strings.TrimPrefix(arg, "--"), "=")
		_, err := complete(t, arg)
		if err == nil {
			t.Errorf("%s accepted", arg)
			continue
		}
		if !strings.Contains(err.Error(), "--"+name) && !strings.Contains(err.Error(), "is not supported") && !strings.Contains(err.Error(), "logging") {
			t.Errorf("%s: %v does not name it", arg, err)
		}
	}
}
