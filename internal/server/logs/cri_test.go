package logs

import (
	"testing"
	"time"
)

func TestParseEntry(t *testing.T) {
	for _, tc := range []struct {
		line    string
		stream  string
		full    bool
		content string
		wantErr bool
	}{
		{line: "2024-05-01T12:00:00.123456789Z stdout F hello world\n", stream: "stdout", full: true, content: "hello world"},
		{line: "2024-05-01T12:00:00.123456789+02:00 stderr P part of a", stream: "stderr", content: "part of a"},
		{line: "2024-05-01T12:00:00Z stdout F \n", stream: "stdout", full: true, content: ""},
		{line: "2024-05-01T12:00:00Z stdout F", stream: "stdout", full: true, content: ""},
		{line: "2024-05-01T12:00:00Z stdout F:x  two  spaces ", stream: "stdout", full: true, content: " two  spaces "},
		{line: "not-a-time stdout F x", wantErr: true},
		{line: "2024-05-01T12:00:00Z stdin F x", wantErr: true},
		{line: "2024-05-01T12:00:00Z stdout X x", wantErr: true},
		{line: "2024-05-01T12:00:00Z", wantErr: true},
		{line: "", wantErr: true},
	} {
		var e entry
		err := parseEntry([]byte(tc.line), &e)
		if (err != nil) != tc.wantErr {
			t.Errorf("%q: err %v, want error %v", tc.line, err, tc.wantErr)
			continue
		}
		if tc.wantErr {
			continue
		}
		if e.stream != tc.stream || e.full != tc.full || string(e.content) != tc.content {
			t.Errorf("%q: got stream %q full %v content %q", tc.line, e.stream, e.full, e.content)
		}
	}
	var e entry
	if err := parseEntry([]byte("2024-05-01T12:00:00.5+02:00 stdout F x"), &e); err != nil ||
		!e.timestamp.Equal(time.Date(2024, 5, 1, 10, 0, 0, 5e8, time.UTC)) {
		t.Errorf("timestamp %v (err %v)", e.timestamp, err)
	}
}
