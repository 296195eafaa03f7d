package app

import (
	"context"
	"net/http"

	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/internal/pod/source"
	"github.com/nodelet/nodelet/internal/pod/syncloop"
	"github.com/nodelet/nodelet/internal/podspec/podutil"
)

// newSources makes the merger of the configured pod sources and n.synced, which the parts
// built before the sync loop are given to tell when the loop has handled every source's
// first snapshot; startSources starts them.
func (n *agent) newSources() {
	kc := n.cfg.Kubelet
	n.merger = source.NewMerger()
	if kc.StaticPodPath != "" {
		n.sources = append(n.sources, podutil.FileSource)
	}
	if kc.StaticPodURL != "" {
		n.sources = append(n.sources, podutil.HTTPSource)
	}
	if n.cluster != nil {
		n.sources = append(n.sources, podutil.APISource)
	}
	n.synced = syncloop.NewSynced(n.merger, n.sources...)
}

// startSources starts the static pod directory and URL sources feeding one merger.
func (n *agent) startSources(ctx context.Context) {
	kc := n.cfg.Kubelet
	if kc.StaticPodPath != "" {
		out := n.merger.Channel(podutil.FileSource)
		fs := source.NewFileSource(kc.StaticPodPath, n.cfg.NodeName, kc.FileCheckFrequency.Duration, out, n.recorder)
		n.comps.start("file source", fs.Run)
	}
	if kc.StaticPodURL != "" {
		out := n.merger.Channel(podutil.HTTPSource)
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
		n.cluster.startAPI(n.comps, "api source", source.NewAPISource(n.cluster.clients.API, n.cfg.NodeName, out).Run)
	}
	if len(n.sources) == 0 {
		klog.InfoS("No pod sources configured: set --pod-manifest-path (staticPodPath) or --manifest-url to run pods")
	}
	n.comps.start("merger", n.merger.Run)
}
