package logs

import (
	"bytes"
	"io"
)

// tailBlockSize is how much of the file tailStart reads at a time, going backwards.
const tailBlockSize = 32 * 1024

// tailStart returns the offset in the first size bytes of r where the last n lines begin.
// A line is a run of partial entries ended by a full one; a run of partial entries at the
// very end (a line still being written) counts as a line too. n < 0 means everything.
func tailStart(r io.ReaderAt, size, n int64) (int64, error) {
	if n < 0 {
		return 0, nil
	}
	if n == 0 {
		return size, nil
	}
	s := &backScanner{r: r, pos: size}
	var lines int64
	last := true // the next entry returned is the file's last
	for {
		_, end, line, ok, err := s.prev()
		if err != nil || !ok {
			return 0, err
		}
		if len(line) == 0 {
			continue
		}
		if isPartialLine(line) {
			if last {
				lines++ // the unfinished line at the end
			}
		} else {
			// end is a line boundary: everything after it is `lines` lines.
			if lines == n {
				return end, nil
			}
			lines++
		}
		last = false
	}
}

// backScanner returns the lines of a file from the last to the first.
type backScanner struct {
	r   io.ReaderAt
	pos int64  // file offset of buf[0]
	buf []byte // the part of [pos, ...) not returned yet
}

// prev returns the line before those already returned: its start and end offsets (end is
// past its newline) and its bytes without the newline. ok is false at the start of the file.
func (s *backScanner) prev() (start, end int64, line []byte, ok bool, err error) {
	for {
		if len(s.buf) == 0 && s.pos == 0 {
			return 0, 0, nil, false, nil
		}
		end = s.pos + int64(len(s.buf))
		body := bytes.TrimSuffix(s.buf, []byte{'\n'})
		if i := bytes.LastIndexByte(body, '\n'); i >= 0 {
			s.buf = s.buf[:i+1]
			return s.pos + int64(i) + 1, end, body[i+1:], true, nil
		}
		if s.pos == 0 {
			s.buf = nil
			return 0, end, body, true, nil
		}
		n := min(int64(tailBlockSize), s.pos)
		block := make([]byte, n, n+int64(len(s.buf)))
		if _, err := s.r.ReadAt(block, s.pos-n); err != nil && err != io.EOF {
			return 0, 0, nil, false, err
		}
		s.buf = append(block, s.buf...)
		s.pos -= n
	}
}
