package eviction

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"golang.org/x/sys/unix"
	"k8s.io/klog/v2"
)

// memcgNotifier asks the kernel to signal when a memory cgroup's usage crosses a threshold
// (cgroup v1: an eventfd registered in cgroup.event_control against memory.usage_in_bytes),
// so that the manager acts on memory pressure between its polls (kernelMemcgNotification).
// The kernel signals a crossing either way; the manager's next cycle decides what it means.
type memcgNotifier struct {
	dir  string          // the memory cgroup's directory, e.g. /sys/fs/cgroup/memory
	wake chan<- struct{} // told, without blocking, of every crossing
	wg   sync.WaitGroup  // the watch goroutines

	mu    sync.Mutex
	usage int64    // the usage in bytes registered now
	event *os.File // the registered eventfd; closing it drops the registration
}

// set registers usage (bytes of memory.usage_in_bytes) as the threshold, replacing the one
// registered before; the same value again is a no-op.
func (n *memcgNotifier) set(usage int64) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.event != nil && n.usage == usage {
		return nil
	}
	efd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		return fmt.Errorf("eventfd for a memory threshold: %w", err)
	}
	// Non-blocking, so the runtime poller serves its reads and Close ends them.
	event := os.NewFile(uintptr(efd), "memcg-threshold")
	if err := register(n.dir, efd, usage); err != nil {
		event.Close()
		return err
	}
	n.stopLocked()
	n.event, n.usage = event, usage
	n.wg.Add(1)
	go n.watch(event)
	return nil
}

// register writes "<eventfd> <usage file fd> <threshold>" to the cgroup's event_control; the
// kernel keeps its own references, so the usage file is closed again at once.
func register(dir string, efd int, usage int64) error {
	usageFile, err := os.Open(filepath.Join(dir, "memory.usage_in_bytes"))
	if err != nil {
		return fmt.Errorf("memory threshold notification needs cgroup v1's memory controller: %w", err)
	}
	defer usageFile.Close()
	control, err := os.OpenFile(filepath.Join(dir, "cgroup.event_control"), os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return fmt.Errorf("memory threshold notification: %w", err)
	}
	defer control.Close()
	if _, err := fmt.Fprintf(control, "%d %d %d", efd, usageFile.Fd(), usage); err != nil {
		return fmt.Errorf("register a memory threshold of %d bytes in %s: %w", usage, dir, err)
	}
	return nil
}

// watch passes each signal of event on to wake until event is closed.
func (n *memcgNotifier) watch(event *os.File) {
	defer n.wg.Done()
	count := make([]byte, 8)
	for {
		if _, err := event.Read(count); err != nil {
			return // closed: replaced by a new threshold, or stopped
		}
		select {
		case n.wake <- struct{}{}:
		default: // a cycle is already due
		}
	}
}

// stop drops the registration and waits for its watch to end.
func (n *memcgNotifier) stop() {
	n.mu.Lock()
	n.stopLocked()
	n.mu.Unlock()
	n.wg.Wait()
}

func (n *memcgNotifier) stopLocked() {
	if n.event != nil {
		n.event.Close()
		n.event, n.usage = nil, 0
	}
}

// usageThreshold is the memory.usage_in_bytes at which signal o's available memory reaches
// threshold amount: the signals count the working set (usage minus inactive file pages), the
// kernel compares usage, so the inactive pages seen now are added back.
func usageThreshold(o observation, amount int64) int64 {
	return o.capacity - amount + o.inactiveFile
}

// updateNotifiers moves each memory threshold's registration to the usage that now means
// the threshold is reached (the inactive file pages change from cycle to cycle).
func (m *Manager) updateNotifiers(obs map[Signal]observation) {
	for t, n := range m.notifiers {
		o, ok := obs[t.Signal]
		if !ok {
			continue
		}
		usage := usageThreshold(o, t.Value.amount(o.capacity))
		if usage <= 0 {
			continue
		}
		if err := n.set(usage); err != nil {
			klog.ErrorS(err, "Eviction manager: cannot register a memory threshold with the kernel; the 10s poll still applies", "signal", t.Signal)
		}
	}
}

// stopNotifiers drops every registration and joins the goroutines watching them.
func (m *Manager) stopNotifiers() {
	for _, n := range m.notifiers {
		n.stop()
	}
}
