package stats

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Each container's writable layer is reported with the filesystem the runtime names for it
// and the inodes the layer uses (not the filesystem's); a container without layer usage is
// left out.
func TestLayersFromTheRuntime(t *testing.T) {
	rt := newFakeRuntime()
	rt.setUsage("c1", "uid1", "app", time.Now(), 1, 1<<20)
	rt.setUsage("c3", "uid1", "side", time.Now(), 1, 1<<20)
	rt.stats = append(rt.stats, &runtimeapi.ContainerStats{Attributes: &runtimeapi.ContainerAttributes{Id: "c2"}})
	rt.stats[1].WritableLayer.InodesUsed = nil // a runtime that counts no inodes
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
	if !ok || len(layers) != 2 {
		t.Fatalf("layers = %+v, want c1 and c3", layers)
	}
	if l3 := layers["c3"]; l3.InodesUsed != nil || l3.UsedBytes != 8192 {
		t.Errorf("layer c3 = %+v, want its bytes and no inode count", l3)
	}
	if l.UsedBytes != 8192 || l.CapacityBytes != fs.capacity || l.InodesUsed == nil || *l.InodesUsed != 4 {
		t.Errorf("layer = %+v, want 8192 bytes and 4 inodes used on a filesystem of %d bytes", l, fs.capacity)
	}
	if dev := deviceOf(os.TempDir()); l.Device != dev || !strings.Contains(dev, ":") {
		t.Errorf("device = %q, want %q (major:minor)", l.Device, dev)
	}

	rt.listErr = context.DeadlineExceeded
	if _, err := p.Layers(context.Background()); err == nil {
		t.Error("a failed runtime call is not reported")
	}
}
