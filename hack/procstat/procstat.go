// Package procstat reads a process's resource use from /proc, for the benchmark drivers in hack/.
package procstat

import (
	"fmt"
	"os"
	"strings"

	"github.com/prometheus/procfs"
)

// Memory is a process's resident memory in MiB: RSS is Anon (heap, stacks) plus File (pages of
// the binary and other mapped files, shared with the page cache) plus shared memory.
type Memory struct {
	RSS, Anon, File float64
}

// ReadMemory returns pid's resident memory; zero values when it cannot be read.
func ReadMemory(pid int) Memory {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return Memory{}
	}
	var m Memory
	fields := map[string]*float64{"VmRSS:": &m.RSS, "RssAnon:": &m.Anon, "RssFile:": &m.File}
	for _, line := range strings.Split(string(b), "\n") {
		for prefix, dst := range fields {
			if !strings.HasPrefix(line, prefix) {
				continue
			}
			var kb float64
			if _, err := fmt.Sscanf(strings.TrimSpace(strings.TrimPrefix(line, prefix)), "%f", &kb); err == nil {
				*dst = kb / 1024
			}
		}
	}
	return m
}

// RSSMiB returns a process's resident set size in MiB, or 0 when it cannot be read.
func RSSMiB(pid int) float64 { return ReadMemory(pid).RSS }

// CPUSeconds is the CPU time pid has used (user and system), or 0 when it cannot be read.
func CPUSeconds(pid int) float64 {
	p, err := procfs.NewProc(pid)
	if err != nil {
		return 0
	}
	st, err := p.Stat()
	if err != nil {
		return 0
	}
	return st.CPUTime()
}
