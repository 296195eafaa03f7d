// Package sysctl checks, and unless told to protect them sets, the kernel tunables a kubelet
// relies on, as the upstream kubelet does at start-up.
package sysctl

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"k8s.io/klog/v2"
)

// Setting is one tunable, named by its path under /proc/sys.
type Setting struct {
	Name  string
	Value int
}

// KubeletDefaults are the values the upstream kubelet insists on, with the same names.
var KubeletDefaults = []Setting{
	// Pods' memory limits, not the kernel's allocation heuristic, decide what a pod may use:
	// a process asking for more than it touches is killed by its cgroup, not refused.
	{"vm/overcommit_memory", 1},
	// Running out of memory kills a process, never the whole node.
	{"vm/panic_on_oom", 0},
	// A node that panics comes back by itself.
	{"kernel/panic", 10},
	{"kernel/panic_on_oops", 1},
	// Every container gets its own session keyring; root's quota must fit a full node.
	{"kernel/keys/root_maxkeys", 1000000},
	{"kernel/keys/root_maxbytes", 25000000},
}

// Ensure reads each setting under root (normally /proc/sys). A differing value is rewritten,
// or, with protect (protectKernelDefaults), reported: the caller refuses to start.
func Ensure(root string, settings []Setting, protect bool) error {
	var errs []error
	for _, s := range settings {
		path := filepath.Join(root, s.Name)
		got, err := read(path)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if got == s.Value {
			continue
		}
		if protect {
			errs = append(errs, fmt.Errorf("invalid kernel flag: %s, expected value: %d, actual value: %d", s.Name, s.Value, got))
			continue
		}
		klog.V(2).InfoS("Updating kernel flag", "flag", s.Name, "expectedValue", s.Value, "actualValue", got)
		if err := os.WriteFile(path, []byte(strconv.Itoa(s.Value)), 0o644); err != nil {
			errs = append(errs, fmt.Errorf("setting kernel flag %s to %d: %w", s.Name, s.Value, err))
		}
	}
	return errors.Join(errs...)
}

func read(path string) (int, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("reading kernel flag: %w", err)
	}
	v, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	if err != nil {
		return 0, fmt.Errorf("reading kernel flag %s: %w", path, err)
	}
	return v, nil
}

// Normalize turns the "/"-separated form (kernel/shm_rmid_forced) into the dotted one;
// in that form a "." inside a component (an interface name like eth0.100) becomes "/".
func Normalize(name string) string {
	if !strings.Contains(name, "/") {
		return name
	}
	return strings.Map(func(r rune) rune {
		switch r {
		case '/':
			return '.'
		case '.':
			return '/'
		}
		return r
	}, name)
}
