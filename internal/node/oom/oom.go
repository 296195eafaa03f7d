// Package oom watches the kernel log for OOM kills and posts a SystemOOM event on the Node for
// a kill outside every pod's cgroup (a pod's own OOM kills show as OOMKilled on its
// container status instead).
package oom

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"syscall"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
)

// ReasonSystemOOM is the event reason upstream posts for a system OOM kill.
const ReasonSystemOOM = "SystemOOM"

// Kill is one OOM kill the kernel reported.
type Kill struct {
	Cgroup  string // the victim's memory cgroup, "/" for the root
	Process string
	PID     int
}

// oomKillLine is the kernel's summary line of an OOM kill (Linux 4.19 and later).
var oomKillLine = regexp.MustCompile(`oom-kill:.*task_memcg=([^,]*),task=([^,]*),pid=(\d+)`)

// parse reads one /dev/kmsg record ("prio,seq,ts,flags;message") and returns the kill it
// reports, if any.
func parse(record string) (Kill, bool) {
	_, msg, ok := strings.Cut(record, ";")
	if !ok {
		msg = record
	}
	m := oomKillLine.FindStringSubmatch(msg)
	if m == nil {
		return Kill{}, false
	}
	pid, _ := strconv.Atoi(m[3])
	cgroup := m[1]
	if cgroup == "" {
		cgroup = "/"
	}
	return Kill{Cgroup: cgroup, Process: m[2], PID: pid}, true
}

// Watcher reads the kernel log and posts SystemOOM events.
type Watcher struct {
	// Open gives the kernel log positioned at its end; nil opens /dev/kmsg.
	Open func() (io.ReadCloser, error)
	// PodsCgroup is the cgroup every pod's cgroup is under (e.g. /kubepods).
	PodsCgroup string
	Recorder   record.EventRecorder
	NodeRef    *v1.ObjectReference
	// Count, when set, is told the cgroup of every kill (container_oom_events_total).
	Count func(cgroup string)
}

// Run reads kills until ctx ends. A kernel log nodelet cannot read is logged and the watcher
// stops: OOM kills then leave no node event, which is not worth stopping the node for.
func (w *Watcher) Run(ctx context.Context) error {
	open := w.Open
	if open == nil {
		open = openKmsg
	}
	r, err := open()
	if err != nil {
		klog.ErrorS(err, "Cannot read the kernel log; system OOM kills will post no event")
		return nil
	}
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-ctx.Done():
			r.Close() // ends the blocking read
		case <-done:
		}
	}()
	klog.InfoS("Watching the kernel log for OOM kills")
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 8192), 1<<20)
	for sc.Scan() {
		if kill, ok := parse(sc.Text()); ok {
			w.report(kill)
		}
	}
	if err := sc.Err(); err != nil && ctx.Err() == nil {
		klog.ErrorS(err, "Reading the kernel log stopped; system OOM kills will post no event")
	}
	return nil
}

func (w *Watcher) report(k Kill) {
	if w.Count != nil {
		w.Count(k.Cgroup)
	}
	if inPod(k.Cgroup, w.PodsCgroup) {
		klog.V(2).InfoS("OOM kill in a pod", "cgroup", k.Cgroup, "process", k.Process, "pid", k.PID)
		return
	}
	msg := fmt.Sprintf("System OOM encountered, victim process: %s, pid: %d", k.Process, k.PID)
	klog.InfoS("System OOM kill", "cgroup", k.Cgroup, "process", k.Process, "pid", k.PID)
	if w.Recorder != nil && w.NodeRef != nil {
		w.Recorder.Event(w.NodeRef, v1.EventTypeWarning, ReasonSystemOOM, msg)
	}
}

func inPod(cgroup, pods string) bool {
	if pods == "" || pods == "/" {
		return false
	}
	return cgroup == pods || strings.HasPrefix(cgroup, strings.TrimSuffix(pods, "/")+"/")
}

// kmsgReader reads /dev/kmsg one record per read, as the device requires, and hands the
// records on as lines.
type kmsgReader struct {
	f   *os.File
	buf []byte
	out []byte
}

func openKmsg() (io.ReadCloser, error) {
	f, err := os.Open("/dev/kmsg")
	if err != nil {
		return nil, err
	}
	if _, err := f.Seek(0, io.SeekEnd); err != nil { // only kills from now on
		f.Close()
		return nil, err
	}
	return &kmsgReader{f: f, buf: make([]byte, 8192)}, nil
}

func (k *kmsgReader) Read(p []byte) (int, error) {
	for len(k.out) == 0 {
		n, err := k.f.Read(k.buf)
		if err != nil {
			if errors.Is(err, syscall.EPIPE) { // records were overwritten before we read them; go on
				continue
			}
			return 0, err
		}
		rec := k.buf[:n]
		if i := strings.IndexByte(string(rec), '\n'); i >= 0 {
			rec = rec[:i] // continuation lines (" KEY=value") are not needed
		}
		k.out = append(append(k.out, rec...), '\n')
	}
	n := copy(p, k.out)
	k.out = k.out[n:]
	return n, nil
}

func (k *kmsgReader) Close() error { return k.f.Close() }
