package logs

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/internal/runtime/cri"
)

// Timing of Follow; variables so tests can shorten them.
var (
	// pollInterval is how often a follower at the end of the file looks for more.
	pollInterval = 100 * time.Millisecond
	// runningCheckPeriod is how often a follower asks whether the container still runs.
	runningCheckPeriod = time.Second
)

// Options select what a Reader writes. The zero value writes the whole file once.
type Options struct {
	// Follow keeps reading as the file grows and across rotation until Running reports the
	// container stopped and the file is drained, or the context ends.
	Follow bool
	// TailLines, when >= 0, starts at the last TailLines lines (partial entries joined).
	// Negative means the whole file; callers that mean "all" should pass -1.
	TailLines int64
	// Since skips entries older than it.
	Since time.Time
	// Timestamps prefixes every output line with its entry's RFC3339Nano timestamp.
	Timestamps bool
	// LimitBytes, when > 0, stops after that many bytes of output.
	LimitBytes int64
	// Stream is v1.LogStreamStdout, v1.LogStreamStderr, or v1.LogStreamAll ("" means All).
	Stream string
	// Running reports whether the container still runs; nil means "until ctx ends".
	Running func(ctx context.Context) (bool, error)
}

// Reader copies one container log file, in CRI format, as plain output.
type Reader struct {
	path string
	opts Options
	file *os.File
	in   *bufio.Reader

	pending      []byte // an unfinished line read at the end of the file
	rotationSeen bool   // the path names a new file; the old one gets one more read first
	stopping     bool   // the container stopped; the file gets one more read, then Copy ends
	lastCheck    time.Time
}

// Open opens the log file at path (symlinks resolved) and positions it per opts.TailLines.
func Open(path string, opts Options) (*Reader, error) {
	resolved, err := filepath.EvalSymlinks(path)
	if err != nil {
		return nil, fmt.Errorf("failed to resolve log file %q: %w", path, err)
	}
	f, err := os.Open(resolved)
	if err != nil {
		return nil, fmt.Errorf("failed to open log file %q: %w", path, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("failed to stat log file %q: %w", path, err)
	}
	size := fi.Size()
	start, err := tailStart(f, size, opts.TailLines)
	if err == nil {
		_, err = f.Seek(start, io.SeekStart)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("failed to tail %d lines of log file %q: %w", opts.TailLines, path, err)
	}
	var src io.Reader = f
	if !opts.Follow {
		// Without Follow the output is the file as it was when opened.
		src = io.LimitReader(f, size-start)
	}
	return &Reader{path: resolved, opts: opts, file: f, in: bufio.NewReaderSize(src, 64*1024)}, nil
}

// Close closes the current file.
func (r *Reader) Close() error { return r.file.Close() }

// Copy writes the selected entries to w. Without Follow it returns at the end of the file;
// with Follow when the container stopped and the file is drained, or ctx ends (ctx.Err()).
func (r *Reader) Copy(ctx context.Context, w io.Writer) error {
	out := newOutput(w, r.opts)
	for {
		line, err := r.in.ReadBytes('\n')
		if err == nil {
			if len(r.pending) > 0 {
				line, r.pending = append(r.pending, line...), nil
			}
			if done, err := out.write(line); done || err != nil {
				return err
			}
			continue
		}
		if err != io.EOF {
			return fmt.Errorf("failed to read log file %q: %w", r.path, err)
		}
		r.pending = append(r.pending, line...)
		if !r.opts.Follow {
			if len(r.pending) > 0 { // a last line without its newline
				_, err := out.write(r.pending)
				return err
			}
			return nil
		}
		if stop, err := r.atEOF(ctx, out); stop || err != nil {
			return err
		}
	}
}

// atEOF handles the end of the file while following: switch to the new file after
// rotation, notice that the container stopped, or wait for more.
func (r *Reader) atEOF(ctx context.Context, out *output) (stop bool, err error) {
	if r.stopping {
		return true, nil
	}
	if r.rotated() {
		// The runtime may write to the old file until it reopens, so it gets one more
		// read before the switch.
		if !r.rotationSeen {
			r.rotationSeen = true
			return false, nil
		}
		return false, r.switchFile(out)
	}
	if r.opts.Running != nil && time.Since(r.lastCheck) >= runningCheckPeriod {
		r.lastCheck = time.Now()
		running, err := r.opts.Running(ctx)
		if err != nil {
			return true, err
		}
		if !running {
			r.stopping = true // read what was written before it stopped
			return false, nil
		}
	}
	select {
	case <-ctx.Done():
		return true, ctx.Err()
	case <-time.After(pollInterval):
		return false, nil
	}
}

// rotated reports whether the path now names another file than the one being read. A
// missing path (between the rename and the runtime's reopen) is not a rotation yet.
func (r *Reader) rotated() bool {
	named, err := os.Stat(r.path)
	if err != nil {
		return false
	}
	current, err := r.file.Stat()
	return err == nil && !os.SameFile(named, current)
}

func (r *Reader) switchFile(out *output) error {
	if len(r.pending) > 0 {
		klog.V(2).InfoS("Log file rotated with an unfinished line", "path", r.path)
		if _, err := out.write(r.pending); err != nil {
			return err
		}
		r.pending = nil
	}
	f, err := os.Open(r.path)
	if err != nil {
		if os.IsNotExist(err) {
			return nil // rotated again meanwhile; try next time
		}
		return fmt.Errorf("failed to open log file %q: %w", r.path, err)
	}
	r.file.Close()
	r.file, r.rotationSeen = f, false
	r.in.Reset(f)
	klog.V(4).InfoS("Following rotated log file", "path", r.path)
	return nil
}

// output turns entries into plain log output per the options.
type output struct {
	w              io.Writer
	since          time.Time
	timestamps     bool
	stdout, stderr bool
	remain         int64 // bytes left; negative: unlimited
	lineStart      bool  // the next write starts an output line
	buf            []byte
}

func newOutput(w io.Writer, opts Options) *output {
	o := &output{
		w: w, since: opts.Since, timestamps: opts.Timestamps, remain: -1, lineStart: true,
		stdout: opts.Stream != v1.LogStreamStderr, stderr: opts.Stream != v1.LogStreamStdout,
	}
	if opts.LimitBytes > 0 {
		o.remain = opts.LimitBytes
	}
	return o
}

// write writes one raw log line; done reports that LimitBytes was reached.
func (o *output) write(line []byte) (done bool, err error) {
	var e entry
	if err := parseEntry(line, &e); err != nil {
		klog.V(4).InfoS("Skipping log line", "err", err)
		return false, nil
	}
	if e.timestamp.Before(o.since) || !o.wants(e.stream) {
		return false, nil
	}
	buf := o.buf[:0]
	if o.timestamps && o.lineStart {
		buf = e.timestamp.AppendFormat(buf, time.RFC3339Nano)
		buf = append(buf, ' ')
	}
	buf = append(buf, e.content...)
	if e.full {
		buf = append(buf, '\n')
	}
	o.buf, o.lineStart = buf, e.full
	if o.remain >= 0 && int64(len(buf)) > o.remain {
		buf = buf[:o.remain]
	}
	n, err := o.w.Write(buf)
	if o.remain >= 0 {
		o.remain -= int64(n)
		done = o.remain <= 0
	}
	return done, err
}

func (o *output) wants(stream string) bool {
	if stream == string(cri.Stdout) {
		return o.stdout
	}
	return o.stderr
}
