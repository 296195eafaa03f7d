// Package imagegc is image garbage collection: it tracks when each image was first seen and
// last used by a container, and when the image filesystem fills past the high threshold it
// removes unused images, least recently used first, until usage is back at the low threshold.
// Images unused for longer than the maximum age go whatever the usage.
//
// The runtime may be shared with other nodelets, so every container on it (of any node) keeps
// its image in use; pinned images (containerd pins its sandbox image) and the configured
// sandbox image are never removed.
package imagegc

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/nodelet/nodelet/internal/runtime/container"
)

// Periods as the kubelet's: a collection pass every 5 minutes. Detection (which images exist
// and which are in use) runs every 30 seconds and at the start of every pass, so "last used"
// is at most 30 seconds stale (the kubelet detects every 5 minutes).
const (
	DefaultPeriod       = 5 * time.Minute
	DefaultDetectPeriod = 30 * time.Second
)

// DefaultSandboxImage is the project's sandbox (pause) image, never removed.
const DefaultSandboxImage = "registry.k8s.io/pause:3.10"

// Node event reasons, as the kubelet's.
const (
	ReasonImageGCFailed       = "ImageGCFailed"
	ReasonFreeDiskSpaceFailed = "FreeDiskSpaceFailed"
	ReasonInvalidDiskCapacity = "InvalidDiskCapacity"
)

// Policy is the KubeletConfiguration's image GC settings.
type Policy struct {
	HighThresholdPercent int           // imageGCHighThresholdPercent (85)
	LowThresholdPercent  int           // imageGCLowThresholdPercent (80)
	MinAge               time.Duration // imageMinimumGCAge (2m): younger images are never removed
	MaxAge               time.Duration // imageMaximumGCAge (0 = off): unused this long, removed
}

// Options configure an ImageGC.
type Options struct {
	Policy  Policy
	Runtime container.ImageGarbageSource
	// KeepImages are never removed, by tag or ID (the sandbox image); DefaultSandboxImage is
	// always kept.
	KeepImages []string
	// Recorder and NodeRef receive the node events; nil drops them.
	Recorder record.EventRecorder
	NodeRef  *v1.ObjectReference
	// Period and DetectPeriod default to DefaultPeriod and DefaultDetectPeriod.
	Period, DetectPeriod time.Duration
	// Clock and StatFS are for tests; StatFS returns a filesystem's capacity and the bytes
	// available to unprivileged users (default: statfs(2)).
	Clock  clock.PassiveClock
	StatFS func(path string) (capacity, available int64, err error)
}

// ImageGC removes unused images.
type ImageGC struct {
	opts Options
	keep map[string]bool

	mu      sync.Mutex // guards records
	records map[string]*imageRecord

	passMu     sync.Mutex // one removal pass at a time
	began      time.Time  // when Run started: MaxAge counts from no earlier
	prevFailed bool       // a failed pass is only reported when the next one fails too
}

// New validates the policy and returns an ImageGC.
func New(opts Options) (*ImageGC, error) {
	p := opts.Policy
	if p.HighThresholdPercent < 0 || p.HighThresholdPercent > 100 {
		return nil, fmt.Errorf("image GC high threshold %d%% is outside 0-100", p.HighThresholdPercent)
	}
	if p.LowThresholdPercent < 0 || p.LowThresholdPercent > 100 {
		return nil, fmt.Errorf("image GC low threshold %d%% is outside 0-100", p.LowThresholdPercent)
	}
	if p.LowThresholdPercent > p.HighThresholdPercent {
		return nil, fmt.Errorf("image GC low threshold %d%% is above the high threshold %d%%", p.LowThresholdPercent, p.HighThresholdPercent)
	}
	if opts.Runtime == nil {
		return nil, errors.New("image GC needs a runtime")
	}
	if opts.Period <= 0 {
		opts.Period = DefaultPeriod
	}
	if opts.DetectPeriod <= 0 {
		opts.DetectPeriod = DefaultDetectPeriod
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.StatFS == nil {
		opts.StatFS = statFS
	}
	g := &ImageGC{opts: opts, keep: map[string]bool{DefaultSandboxImage: true}, records: map[string]*imageRecord{}}
	for _, img := range opts.KeepImages {
		if img != "" {
			g.keep[img] = true
		}
	}
	g.began = opts.Clock.Now()
	registerMetrics()
	return g, nil
}

// disabled: a high threshold of 100% and no maximum age turn the periodic passes off (the
// eviction manager's DeleteUnusedImages still works).
func (g *ImageGC) disabled() bool {
	return g.opts.Policy.HighThresholdPercent == 100 && g.opts.Policy.MaxAge == 0
}

// Run detects images every DetectPeriod and collects every Period, both at once first, until
// ctx ends. Failed passes are logged and reported; they never stop nodelet.
func (g *ImageGC) Run(ctx context.Context) error {
	g.passMu.Lock()
	g.began = g.opts.Clock.Now()
	g.passMu.Unlock()
	if g.disabled() {
		klog.InfoS("Image garbage collection is off (imageGCHighThresholdPercent is 100 and imageMaximumGCAge is 0)")
	} else {
		klog.InfoS("Starting image garbage collection", "period", g.opts.Period, "policy", g.opts.Policy)
	}
	detect := time.NewTicker(g.opts.DetectPeriod)
	defer detect.Stop()
	collect := time.NewTicker(g.opts.Period)
	defer collect.Stop()
	g.detectAndLog(ctx)
	g.runPass(ctx)
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-detect.C:
			g.detectAndLog(ctx)
		case <-collect.C:
			g.runPass(ctx)
		}
	}
}

func (g *ImageGC) detectAndLog(ctx context.Context) {
	if _, err := g.detect(ctx, g.opts.Clock.Now()); err != nil && ctx.Err() == nil {
		klog.InfoS("Failed to detect images", "err", err)
	}
}

// runPass runs one periodic pass and reports a failure as an event when the previous pass
// failed too (the first may only mean the runtime was not ready yet).
func (g *ImageGC) runPass(ctx context.Context) {
	if g.disabled() {
		return
	}
	err := g.GarbageCollect(ctx)
	switch {
	case err == nil:
		g.prevFailed = false
		return
	case ctx.Err() != nil:
		return
	case g.prevFailed:
		klog.ErrorS(err, "Image garbage collection failed again")
		g.event(v1.EventTypeWarning, ReasonImageGCFailed, err.Error())
	default:
		klog.ErrorS(err, "Image garbage collection failed once; the runtime may not be ready yet")
	}
	g.prevFailed = true
}

// DeleteUnusedImages is the eviction manager's pass on disk pressure: every image no container
// uses, that is neither pinned nor kept, and is older than MinAge, is removed.
func (g *ImageGC) DeleteUnusedImages(ctx context.Context) error {
	klog.InfoS("Deleting unused images")
	g.passMu.Lock()
	defer g.passMu.Unlock()
	now := g.opts.Clock.Now()
	images, err := g.evictionOrder(ctx, now)
	if err != nil {
		return err
	}
	_, err = g.freeSpace(ctx, math.MaxInt64, now, images)
	return err
}

func (g *ImageGC) event(eventType, reason, message string) {
	if g.opts.Recorder != nil && g.opts.NodeRef != nil {
		g.opts.Recorder.Event(g.opts.NodeRef, eventType, reason, message)
	}
}
