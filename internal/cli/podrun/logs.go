package podrun

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/internal/server/logs"
)

// Log streaming timing; variables so tests can shorten them.
var (
	// attemptPoll is how often a container's log directory is looked at for a new attempt.
	attemptPoll = 100 * time.Millisecond
)

// maxLine bounds a line kept back for its end, so a container that never writes a newline
// still shows its output.
const maxLine = 64 * 1024

// LogStreamer copies the logs of a pod's containers, as the runtime writes them in the CRI
// format under the pod's log directory (<container>/<attempt>.log), to one writer, each line
// prefixed with its container's name. It follows each container across restarts (attempt 0,
// 1, ...) and log rotation until Drain is called and everything written is copied.
type LogStreamer struct {
	dir        string
	containers []string
	out        *lineSink
	width      int // of the longest container name, so the prefixes line up

	drainOnce sync.Once
	drain     chan struct{} // closed by Drain
	done      chan struct{} // closed when Run returns
}

// NewLogStreamer streams the logs of containers (names, in the order of the pod spec) found
// under the pod log directory dir to out.
func NewLogStreamer(dir string, containers []string, out io.Writer) *LogStreamer {
	width := 0
	for _, c := range containers {
		width = max(width, len(c))
	}
	return &LogStreamer{
		dir: dir, containers: containers, out: &lineSink{out: out}, width: width,
		drain: make(chan struct{}), done: make(chan struct{}),
	}
}

// Run follows every container's logs until they are drained (after Drain) or ctx ends. A
// failure to write the output stops it with that error.
func (s *LogStreamer) Run(ctx context.Context) error {
	defer close(s.done)
	g, ctx := errgroup.WithContext(ctx)
	for _, name := range s.containers {
		g.Go(func() error { return s.follow(ctx, name) })
	}
	return g.Wait()
}

// Drain says the pod's containers have all stopped: each follower copies what is left and
// ends. Drained is closed once they all have.
func (s *LogStreamer) Drain() { s.drainOnce.Do(func() { close(s.drain) }) }

// Drained is closed when Run has returned.
func (s *LogStreamer) Drained() <-chan struct{} { return s.done }

func (s *LogStreamer) draining() bool {
	select {
	case <-s.drain:
		return true
	default:
		return false
	}
}

// follow copies one container's attempts in order until drained or ctx ends.
func (s *LogStreamer) follow(ctx context.Context, container string) error {
	w := &prefixWriter{sink: s.out, prefix: []byte(fmt.Sprintf("%-*s | ", s.width, container))}
	defer w.flush()
	next := 0
	for {
		attempt, ok := s.waitAttempt(ctx, container, next)
		if !ok {
			return nil
		}
		if err := s.copyAttempt(ctx, container, attempt, w); err != nil {
			return err
		}
		if ctx.Err() != nil {
			return nil
		}
		next = attempt + 1
	}
}

// copyAttempt copies one attempt's log until it is drained: a later attempt exists (this one
// exited before it was created) or the streamer is draining.
func (s *LogStreamer) copyAttempt(ctx context.Context, container string, attempt int, w *prefixWriter) error {
	path := filepath.Join(s.dir, container, strconv.Itoa(attempt)+".log")
	r, err := logs.Open(path, logs.Options{Follow: true, TailLines: -1,
		Running: func(context.Context) (bool, error) {
			later, _ := s.firstAttempt(container, attempt+1)
			return later < 0 && !s.draining(), nil
		},
	})
	if err != nil {
		// Removed before it could be read (the pod went away meanwhile): nothing to copy.
		klog.V(2).InfoS("Skipping container log", "path", path, "err", err)
		return nil
	}
	defer r.Close()
	err = r.Copy(ctx, w)
	if err != nil && ctx.Err() == nil {
		if errors.As(err, new(outputError)) {
			return err
		}
		klog.V(2).InfoS("Stopped following a container log", "path", path, "err", err)
	}
	w.flush() // an attempt's unfinished last line ends with it
	return nil
}

// waitAttempt waits for the first attempt numbered from on to have a log file. It gives up
// (false) once draining finds none, or when ctx ends.
func (s *LogStreamer) waitAttempt(ctx context.Context, container string, from int) (int, bool) {
	attempt, found := 0, false
	settled := func(context.Context) (bool, error) {
		// Read the flag first: once draining, a listing that finds nothing is final.
		draining := s.draining()
		if first, _ := s.firstAttempt(container, from); first >= 0 {
			attempt, found = first, true
			return true, nil
		}
		return draining, nil
	}
	_ = wait.PollUntilContextCancel(ctx, attemptPoll, true, settled)
	return attempt, found
}

// firstAttempt is the lowest attempt numbered from on with a live log file (N.log; rotated
// files have a suffix), or -1.
func (s *LogStreamer) firstAttempt(container string, from int) (int, error) {
	entries, err := os.ReadDir(filepath.Join(s.dir, container))
	if err != nil {
		return -1, err
	}
	found := -1
	for _, e := range entries {
		n, err := strconv.Atoi(strings.TrimSuffix(e.Name(), ".log"))
		if err != nil || !strings.HasSuffix(e.Name(), ".log") || n < from {
			continue
		}
		if found < 0 || n < found {
			found = n
		}
	}
	return found, nil
}

// lineSink writes whole lines from many containers to one writer, never two interleaved.
type lineSink struct {
	mu  sync.Mutex
	out io.Writer
}

// outputError is a failure to write the streamed logs (not to read them).
type outputError struct{ error }

func (s *lineSink) writeLine(prefix, line []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	buf := make([]byte, 0, len(prefix)+len(line))
	buf = append(append(buf, prefix...), line...)
	if _, err := s.out.Write(buf); err != nil {
		return outputError{err}
	}
	return nil
}

// prefixWriter puts its prefix before every line and hands whole lines to the sink.
type prefixWriter struct {
	sink    *lineSink
	prefix  []byte
	pending []byte // the start of a line whose end has not come yet
}

func (w *prefixWriter) Write(p []byte) (int, error) {
	w.pending = append(w.pending, p...)
	for {
		i := bytes.IndexByte(w.pending, '\n')
		if i < 0 {
			break
		}
		if err := w.sink.writeLine(w.prefix, w.pending[:i+1]); err != nil {
			return 0, err
		}
		w.pending = w.pending[i+1:]
	}
	if len(w.pending) >= maxLine {
		if err := w.flush(); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

// flush writes an unfinished line, ended with a newline.
func (w *prefixWriter) flush() error {
	if len(w.pending) == 0 {
		return nil
	}
	line := append(w.pending, '\n')
	w.pending = nil
	return w.sink.writeLine(w.prefix, line)
}
