package imagegc

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/internal/lib/metrics"
)

// Values of the reason label of kubelet_image_garbage_collected_total.
const (
	reasonAge   = "age"
	reasonSpace = "space"
)

var (
	collectedImages = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kubelet_image_garbage_collected_total",
		Help: "[ALPHA] Number of images removed by image garbage collection, by reason: disk usage (space) or image age (age).",
	}, []string{"reason"})
	metricsOnce sync.Once
)

func registerMetrics() {
	metricsOnce.Do(func() { metrics.Registry().MustRegister(collectedImages) })
}

// GarbageCollect runs one pass: images unused for longer than MaxAge go first, then, when the
// image filesystem's usage is at or above the high threshold, unused images least recently
// used first until usage is back at the low threshold.
func (g *ImageGC) GarbageCollect(ctx context.Context) error {
	g.passMu.Lock()
	defer g.passMu.Unlock()
	now := g.opts.Clock.Now()
	images, err := g.evictionOrder(ctx, now)
	if err != nil {
		return err
	}
	if images, err = g.freeOldImages(ctx, images, now); err != nil {
		return err
	}
	capacity, available, err := g.usage(ctx)
	if err != nil {
		return err
	}
	if capacity == 0 {
		err := errors.New("invalid capacity 0 on image filesystem")
		g.event(v1.EventTypeWarning, ReasonInvalidDiskCapacity, err.Error())
		return err
	}
	available = min(available, capacity)
	usagePercent := 100 - int(available*100/capacity)
	if usagePercent < g.opts.Policy.HighThresholdPercent {
		return nil
	}
	toFree := capacity*int64(100-g.opts.Policy.LowThresholdPercent)/100 - available
	klog.InfoS("Image filesystem usage is at or above the high threshold; removing unused images",
		"usage", usagePercent, "highThreshold", g.opts.Policy.HighThresholdPercent,
		"lowThreshold", g.opts.Policy.LowThresholdPercent, "bytesToFree", toFree)
	freed, err := g.freeSpace(ctx, toFree, now, images)
	if err != nil {
		return err
	}
	if freed < toFree {
		// The kubelet's message, which tools and tests match.
		err := fmt.Errorf("Failed to garbage collect required amount of images. Attempted to free %d bytes, but only found %d bytes eligible to free.", toFree, freed)
		g.event(v1.EventTypeWarning, ReasonFreeDiskSpaceFailed, err.Error())
		return err
	}
	return nil
}

// freeOldImages removes images unused for longer than MaxAge, once nodelet itself has run
// that long, and returns the images left.
func (g *ImageGC) freeOldImages(ctx context.Context, images []candidate, now time.Time) ([]candidate, error) {
	maxAge := g.opts.Policy.MaxAge
	if maxAge == 0 || now.Sub(g.began) <= maxAge {
		return images, nil
	}
	var left []candidate
	var errs []error
	for _, img := range images {
		if now.Sub(img.lastUsed) <= maxAge {
			left = append(left, img)
			continue
		}
		if err := g.freeImage(ctx, img, reasonAge); err != nil {
			errs = append(errs, err)
			left = append(left, img)
		}
	}
	if len(errs) > 0 {
		return left, fmt.Errorf("removing images unused for more than %v: %w", maxAge, errors.Join(errs...))
	}
	return left, nil
}

// freeSpace removes images in the given order until toFree bytes are freed, skipping those
// younger than MinAge, and returns the bytes freed.
func (g *ImageGC) freeSpace(ctx context.Context, toFree int64, now time.Time, images []candidate) (int64, error) {
	var freed int64
	var errs []error
	for _, img := range images {
		if now.Sub(img.firstDetected) < g.opts.Policy.MinAge {
			klog.V(4).InfoS("Image too young to remove", "imageID", img.id, "age", now.Sub(img.firstDetected))
			continue
		}
		if err := g.freeImage(ctx, img, reasonSpace); err != nil {
			errs = append(errs, err)
			continue
		}
		freed += img.size
		if freed >= toFree {
			break
		}
	}
	if len(errs) > 0 {
		return freed, fmt.Errorf("wanted to free %d bytes, freed %d with errors: %w", toFree, freed, errors.Join(errs...))
	}
	return freed, nil
}

func (g *ImageGC) freeImage(ctx context.Context, img candidate, reason string) error {
	klog.InfoS("Removing unused image", "imageID", img.id, "tags", img.tags, "size", img.size, "reason", reason)
	if err := g.opts.Runtime.RemoveImage(ctx, img.id); err != nil {
		return err
	}
	g.mu.Lock()
	delete(g.records, img.id)
	g.mu.Unlock()
	collectedImages.WithLabelValues(reason).Inc()
	return nil
}

// usage returns the image filesystem's capacity and available bytes.
func (g *ImageGC) usage(ctx context.Context) (capacity, available int64, err error) {
	mountpoint, err := g.opts.Runtime.ImageFsMountpoint(ctx)
	if err != nil {
		return 0, 0, err
	}
	capacity, available, err = g.opts.StatFS(mountpoint)
	if err != nil {
		return 0, 0, fmt.Errorf("statfs %s: %w", mountpoint, err)
	}
	return capacity, available, nil
}

func statFS(path string) (capacity, available int64, err error) {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return 0, 0, err
	}
	return int64(st.Blocks) * st.Bsize, int64(st.Bavail) * st.Bsize, nil
}
