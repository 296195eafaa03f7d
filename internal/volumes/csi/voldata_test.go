package csi

import (
	"os"
	"path/filepath"
	"testing"
)

// vol_data.json is replaced whole (through a temporary file renamed over it), never left
// torn or beside a stray temporary.
func TestVolDataReplacedWhole(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "vol")
	if err := writeVolData(dir, volData{SpecVolID: "pv-1", DriverName: "a.example.com", VolumeHandle: "h1"}); err != nil {
		t.Fatal(err)
	}
	if err := writeVolData(dir, volData{SpecVolID: "pv-1", DriverName: "a.example.com", VolumeHandle: "h2", VolumeMode: "Block"}); err != nil {
		t.Fatal(err)
	}
	d, err := readVolData(dir)
	if err != nil || d.VolumeHandle != "h2" || d.VolumeMode != "Block" {
		t.Fatalf("read back %+v, %v", d, err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 || entries[0].Name() != volDataFile {
		t.Fatalf("directory holds %v, want only %s", entries, volDataFile)
	}
	if fi, _ := os.Stat(filepath.Join(dir, volDataFile)); fi.Mode().Perm() != 0o640 {
		t.Fatalf("mode %v, want 0640", fi.Mode().Perm())
	}
}
