package buildstamp

import (
	"os"
	"strings"
	"testing"
)

// A test binary carries no VCS stamp: a bench refuses to measure such a binary.
func TestCheckStampRefusesUnstampedBinary(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if err := Check(exe, true); err == nil || !strings.Contains(err.Error(), "no VCS stamp") {
		t.Fatalf("got %v, want a refusal naming the missing stamp", err)
	}
}
