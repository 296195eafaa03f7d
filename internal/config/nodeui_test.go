package config

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

func TestNodeUIFlags(t *testing.T) {
	cfg := mustComplete(t)
	if cfg.NodeUIPort != 0 || cfg.NodeUIAddress != "127.0.0.1" {
		t.Errorf("defaults: port %d, address %q; want off, loopback", cfg.NodeUIPort, cfg.NodeUIAddress)
	}
	cfg = mustComplete(t, "--node-ui-port=4194", "--node-ui-address=::")
	if cfg.NodeUIPort != 4194 || cfg.NodeUIAddress != "::" {
		t.Errorf("port %d, address %q", cfg.NodeUIPort, cfg.NodeUIAddress)
	}
	_, err := complete(t, "--node-ui-port=70000", "--node-ui-address=localhost")
	for _, want := range []string{
		"--node-ui-port: must be between 0 and 65535, got 70000",
		`--node-ui-address: must be an IP address, got "localhost"`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v lacks %q", err, want)
		}
	}
	// The address only matters when the page is on.
	mustComplete(t, "--node-ui-address=localhost")
}

// The upstream kubelet has no such flags: --help says so.
func TestNodeUIFlagsSayTheyAreNodeletOnly(t *testing.T) {
	fs := pflag.NewFlagSet("nodelet", pflag.ContinueOnError)
	AddFlags(fs)
	for _, name := range []string{"node-ui-port", "node-ui-address"} {
		if f := fs.Lookup(name); f == nil || !strings.HasPrefix(f.Usage, "nodelet only") {
			t.Errorf("--%s usage does not start with \"nodelet only\": %+v", name, f)
		}
	}
}
