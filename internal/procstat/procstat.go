// Package procstat reads a process's resource use from /proc.
package procstat

import (
	"fmt"
	"os"
	"strings"
)

// RSSMiB returns a process's resident set size in MiB, or 0 when it cannot be read.
func RSSMiB(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "VmRSS:") {
			var kb float64
			if _, err := fmt.Sscanf(strings.TrimSpace(strings.TrimPrefix(line, "VmRSS:")), "%f", &kb); err != nil {
				return 0
			}
			return kb / 1024
		}
	}
	return 0
}
