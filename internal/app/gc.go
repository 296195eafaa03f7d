package app

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/internal/node/gc"
	"github.com/nodelet/nodelet/internal/node/imagegc"
	"github.com/nodelet/nodelet/internal/pod/podworkers"
	"github.com/nodelet/nodelet/internal/runtime/container"
)

// startGC builds container and image garbage collection, keeps them in n.containerGC and
// n.imageGC (the eviction manager calls them on disk pressure) and starts both. A pod exists
// while a source wants it or its worker has not finished; it has terminated once its worker
// says so. The configuration was validated, so a failure here only logs: nodelet runs on
// without garbage collection (and n.containerGC, n.imageGC stay nil).
func (n *agent) startGC(workers *podworkers.PodWorkers, sourcesReady func() bool) {
	kc, ref := n.cfg.Kubelet, gcNodeRef(n.cfg.NodeName)
	containers, images := n.runtime, n.images
	policy := n.cfg.ContainerGC
	cgc, err := gc.New(gc.Options{
		Policy: gc.Policy{
			MinAge: policy.MinAge, MaxPerPodContainer: int(policy.MaxPerPodContainer), MaxContainers: int(policy.MaxContainers),
		},
		Runtime: containers, NodeName: n.cfg.NodeName, RootDir: n.cfg.RootDir,
		PodLogsDir: kc.PodLogsDir, ContainerLogsDir: container.DefaultContainerLogsDir,
		PodExists: func(uid types.UID) bool {
			if _, ok := n.pods.Get(uid); ok {
				return true
			}
			_, ok := workers.State(uid)
			return ok
		},
		PodTerminated: func(uid types.UID) bool {
			state, ok := workers.State(uid)
			return ok && state == podworkers.Terminated
		},
		SourcesReady: sourcesReady, Recorder: n.recorder, NodeRef: ref,
	})
	if err != nil {
		klog.ErrorS(err, "Cannot start container garbage collection")
		return
	}
	igc, err := imagegc.New(imagegc.Options{
		Policy: imagegc.Policy{
			HighThresholdPercent: int(n.cfg.ImageGCHighPercent),
			LowThresholdPercent:  int(n.cfg.ImageGCLowPercent),
			MinAge:               kc.ImageMinimumGCAge.Duration, MaxAge: kc.ImageMaximumGCAge.Duration,
		},
		Runtime: images, KeepImages: []string{n.cfg.PodInfraContainerImage}, Recorder: n.recorder, NodeRef: ref,
	})
	if err != nil {
		klog.ErrorS(err, "Cannot start image garbage collection")
		return
	}
	n.containerGC, n.imageGC = cgc, igc
	n.comps.start("container GC", cgc.Run)
	n.comps.start("image GC", igc.Run)
}

// gcNodeRef is the node as events name it (as internal/node does).
func gcNodeRef(name string) *v1.ObjectReference {
	return &v1.ObjectReference{Kind: "Node", Name: name, UID: types.UID(name)}
}

// volumeImages are the images the image volumes of the node's pods mount: image GC keeps them.
func (n *agent) volumeImages() []string {
	var refs []string
	for _, p := range n.pods.Pods() {
		for _, vol := range p.Spec.Volumes {
			if vol.Image != nil {
				refs = append(refs, vol.Image.Reference)
			}
		}
	}
	return refs
}
