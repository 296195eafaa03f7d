package stats

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Each container's writable layer is reported with the filesystem the runtime names for it;
// a container without layer usage is left out.
func TestLayersFromTheRuntime(t *testing.T) {
	rt := newFakeRuntime()
	rt.setUsage("c1", "uid1", "app", time.Now(), 1, 1<<20)
	rt.stats = append(rt.stats, &runtimeapi.ContainerStats{Attributes: &runtimeapi.ContainerAttributes{Id: "c2"}})
	p := NewSummaryProvider(Deps{Runtime: rt})
	layers, err := p.Layers(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	fs, err := statFS(os.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	l, ok := layers["c1"]
	if !ok || len(layers) != 1 {
		t.Fatalf("layers = %+v, want c1 only", layers)
	}
	if l.UsedBytes != 8192 || l.CapacityBytes != fs.capacity || l.Inodes != fs.inodes || l.InodesFree == 0 {
		t.Errorf("layer = %+v, want 8192 bytes used on a filesystem of %d bytes, %d inodes", l, fs.capacity, fs.inodes)
	}
	if dev := deviceOf(os.TempDir()); l.Device != dev || !strings.Contains(dev, ":") {
		t.Errorf("device = %q, want %q (major:minor)", l.Device, dev)
	}

	rt.listErr = context.DeadlineExceeded
	if _, err := p.Layers(context.Background()); err == nil {
		t.Error("a failed runtime call is not reported")
	}
}
