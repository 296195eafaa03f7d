package main

import (
	"testing"
	"time"
)

func TestRender(t *testing.T) {
	now := time.Date(2026, 11, 23, 9, 8, 7, 654321000, time.UTC)
	for format, want := range map[string]string{
		"%3t":      "09:08:07.654",
		"%t":       "09:08:07",
		"at %1t %": "at 09:08:07.6 %",
		"%c %t":    "%c 09:08:07",
	} {
		if got := render(format, now); got != want {
			t.Errorf("render(%q) = %q, want %q", format, got, want)
		}
	}
}

func TestParseArgs(t *testing.T) {
	for _, args := range [][]string{{"-d0", "%3t"}, {"-d", "0", "%3t"}} {
		if d, f, err := parseArgs(args); err != nil || d != 0 || f != "%3t" {
			t.Errorf("parseArgs(%q) = %v, %q, %v", args, d, f, err)
		}
	}
	if _, _, err := parseArgs([]string{"-dx", "%t"}); err == nil {
		t.Error("bad delay accepted")
	}
}
