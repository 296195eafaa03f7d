// Package logs serves container and node logs over HTTP and rotates container log files.
//
// Container logs are files the runtime writes in the CRI format, one entry a line:
//
//	<RFC3339Nano timestamp> <stdout|stderr> <P|F>[:<more tags>] <content>
//
// where P marks a partial entry (the line goes on in the next entry of the same stream) and
// F a full one (the line ends here).
package logs

import (
	"bytes"
	"errors"
	"fmt"
	"time"

	"github.com/nodelet/nodelet/internal/runtime/cri"
)

// entry is one parsed line of a CRI log file.
type entry struct {
	timestamp time.Time
	stream    string // cri.Stdout or cri.Stderr
	full      bool   // F: the line ends with this entry
	content   []byte // without the trailing newline
}

var errMalformed = errors.New("malformed CRI log entry")

// parseEntry parses one CRI log line; a trailing newline is ignored. content aliases line.
func parseEntry(line []byte, e *entry) error {
	line = bytes.TrimSuffix(line, []byte{'\n'})
	ts, rest, ok := bytes.Cut(line, []byte{' '})
	if !ok {
		return fmt.Errorf("%w: no timestamp delimiter", errMalformed)
	}
	t, err := time.Parse(time.RFC3339Nano, string(ts))
	if err != nil {
		return fmt.Errorf("%w: timestamp %q: %v", errMalformed, ts, err)
	}
	stream, rest, ok := bytes.Cut(rest, []byte{' '})
	if !ok {
		return fmt.Errorf("%w: no stream delimiter", errMalformed)
	}
	if s := cri.LogStreamType(stream); s != cri.Stdout && s != cri.Stderr {
		return fmt.Errorf("%w: unknown stream %q", errMalformed, stream)
	}
	// An empty F line may come without the space before its (empty) content.
	tags, content, _ := bytes.Cut(rest, []byte{' '})
	tag, _, _ := bytes.Cut(tags, []byte{':'})
	switch string(tag) {
	case string(cri.LogTagPartial):
		e.full = false
	case string(cri.LogTagFull):
		e.full = true
	default:
		return fmt.Errorf("%w: unknown tag %q", errMalformed, tags)
	}
	e.timestamp, e.stream, e.content = t, string(stream), content
	return nil
}

// isPartialLine reports whether a raw log line is a partial (P) entry; lines that do not
// parse count as full, so they end a line when counting lines from the end.
func isPartialLine(line []byte) bool {
	var e entry
	return parseEntry(line, &e) == nil && !e.full
}
