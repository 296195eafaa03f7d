package imagegc

import (
	"context"
	"sort"
	"time"

	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/internal/runtime/container"
)

// imageRecord is what is known of one image, by ID.
type imageRecord struct {
	firstDetected time.Time
	lastUsed      time.Time // zero: never seen in use
	size          int64
	pinned        bool // by the runtime or KeepImages
	tags          []string
}

// candidate is an image that may be removed.
type candidate struct {
	id string
	imageRecord
}

// detect lists images and containers, records new images as first detected at now, marks
// those some container uses as used now, forgets images that are gone, and returns the IDs of
// the images in use.
func (g *ImageGC) detect(ctx context.Context, now time.Time) (map[string]bool, error) {
	images, err := g.opts.Runtime.ListImages(ctx)
	if err != nil {
		return nil, err
	}
	used, err := g.opts.Runtime.ImagesInUse(ctx)
	if err != nil {
		return nil, err
	}
	refs := map[string]bool{}
	for _, ref := range used {
		refs[ref] = true
	}
	inUse := map[string]bool{}
	g.mu.Lock()
	defer g.mu.Unlock()
	present := map[string]bool{}
	for _, img := range images {
		present[img.ID] = true
		rec := g.records[img.ID]
		if rec == nil {
			klog.V(4).InfoS("Detected new image", "imageID", img.ID, "tags", img.RepoTags)
			rec = &imageRecord{firstDetected: now}
			g.records[img.ID] = rec
		}
		if referenced(img, refs) {
			rec.lastUsed = now
			inUse[img.ID] = true
		}
		rec.size = int64(img.Size)
		rec.pinned = img.Pinned || referenced(img, g.keep)
		rec.tags = img.RepoTags
	}
	for id := range g.records {
		if !present[id] {
			delete(g.records, id)
		}
	}
	return inUse, nil
}

// referenced reports whether refs names the image by ID, tag or digest.
func referenced(img container.Image, refs map[string]bool) bool {
	if refs[img.ID] {
		return true
	}
	for _, list := range [][]string{img.RepoTags, img.RepoDigests} {
		for _, r := range list {
			if refs[r] {
				return true
			}
		}
	}
	return false
}

// evictionOrder detects, then returns the images neither in use nor pinned, least recently
// used first (never-used ones first of all), ties broken by the earliest detection.
func (g *ImageGC) evictionOrder(ctx context.Context, now time.Time) ([]candidate, error) {
	inUse, err := g.detect(ctx, now)
	if err != nil {
		return nil, err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []candidate
	for id, rec := range g.records {
		if inUse[id] || rec.pinned {
			continue
		}
		out = append(out, candidate{id: id, imageRecord: *rec})
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].lastUsed.Equal(out[j].lastUsed) {
			return out[i].lastUsed.Before(out[j].lastUsed)
		}
		if !out[i].firstDetected.Equal(out[j].firstDetected) {
			return out[i].firstDetected.Before(out[j].firstDetected)
		}
		return out[i].id < out[j].id
	})
	return out, nil
}
