// Package kerneltunables saves and restores the sysctls a kubelet rewrites at start-up, for the
// benchmark drivers in hack/ that run the upstream kubelet on a shared machine.
package kerneltunables

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// names are the sysctls both kubelets rewrite at start-up (they refuse to start with
// protectKernelDefaults when these differ).
var names = []string{
	"vm/overcommit_memory", "vm/panic_on_oom", "kernel/panic", "kernel/panic_on_oops",
	"kernel/keys/root_maxkeys", "kernel/keys/root_maxbytes",
}

// Save reads the tunables and returns a function that puts back the ones that changed.
func Save() func() {
	saved := map[string]string{}
	for _, name := range names {
		if v, err := os.ReadFile(filepath.Join("/proc/sys", name)); err == nil {
			saved[name] = strings.TrimSpace(string(v))
		}
	}
	return func() {
		for name, v := range saved {
			path := filepath.Join("/proc/sys", name)
			if cur, err := os.ReadFile(path); err == nil && strings.TrimSpace(string(cur)) == v {
				continue
			}
			if err := os.WriteFile(path, []byte(v), 0o644); err != nil {
				fmt.Fprintf(os.Stderr, "restoring %s=%s: %v\n", strings.ReplaceAll(name, "/", "."), v, err)
			}
		}
	}
}
