package app

import (
	"context"
	"net/http"
	"sync/atomic"

	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/internal/podutil"
	"github.com/nodelet/nodelet/internal/source"
	"github.com/nodelet/nodelet/internal/syncloop"
)

// startSources starts the static pod directory and URL sources feeding one merger.
func (n *agent) startSources(ctx context.Context) {
	kc := n.cfg.Kubelet
	n.merger = source.NewMerger()
	if kc.StaticPodPath != "" {
		out := n.merger.Channel(podutil.FileSource)
		n.sources = append(n.sources, podutil.FileSource)
		fs := source.NewFileSource(kc.StaticPodPath, n.cfg.NodeName, kc.FileCheckFrequency.Duration, out, n.recorder)
		n.comps.start("file source", fs.Run)
	}
	if kc.StaticPodURL != "" {
		out := n.merger.Channel(podutil.HTTPSource)
		n.sources = append(n.sources, podutil.HTTPSource)
		header := http.Header{}
		for k, vs := range kc.StaticPodURLHeader {
			for _, v := range vs {
				header.Add(k, v)
			}
		}
		us := source.NewURLSource(kc.StaticPodURL, header, n.cfg.NodeName, kc.HTTPCheckFrequency.Duration, out, n.recorder)
		n.comps.start("url source", us.Run)
	}
	if n.cluster != nil {
		out := n.merger.Channel(podutil.APISource)
		n.sources = append(n.sources, podutil.APISource)
		n.cluster.startAPI(n.comps, "api source", source.NewAPISource(n.cluster.clients.API, n.cfg.NodeName, out).Run)
	}
	if len(n.sources) == 0 {
		klog.InfoS("No pod sources configured: set --pod-manifest-path (staticPodPath) or --manifest-url to run pods")
	}
	n.synced = &podsSynced{merger: n.merger, sources: n.sources}
	n.comps.start("merger", n.merger.Run)
}

// podsSynced says whether the sync loop has handled the first snapshot of every pod source,
// so every pod they had is in the pod manager (admitted or refused). Only then may a pod
// missing from it be treated as gone: before, a restart would take it for an orphan and tear
// down its volumes, cgroups, CPUs, devices or containers. Upstream counts its sources ready
// at that point too: after the loop handled their first update. A merger that has merely
// seen the snapshot is not enough, as the loop may not have added its pods yet.
type podsSynced struct {
	merger  *source.Merger
	sources []string
	loop    atomic.Pointer[syncloop.Loop] // set once the loop is built
}

// ready is false until the loop is set (and on a nil podsSynced: nodelet runs no sources).
func (s *podsSynced) ready() bool {
	if s == nil {
		return false
	}
	loop := s.loop.Load()
	if loop == nil {
		return false
	}
	through, ok := s.merger.SyncedThrough(s.sources...)
	return ok && loop.Handled() >= through
}
