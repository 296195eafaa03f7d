package app

import (
	"path/filepath"

	"github.com/nodelet/nodelet/internal/server/podresources"
)

// startPodResources serves the pod-resources API at <root-dir>/pod-resources/kubelet.sock, as
// upstream does whenever it runs pods beyond run-once. A socket that cannot be opened stops
// nodelet at start, as it stops the upstream kubelet.
func (n *agent) startPodResources(podsSynced func() bool) error {
	opts := n.podResourcesOptions()
	opts.PodsSynced = podsSynced
	s, err := podresources.New(opts)
	if err != nil {
		return err
	}
	if err := s.Listen(); err != nil {
		return err
	}
	n.comps.start("pod resources", s.Run)
	return nil
}

// podResourcesOptions names what the API reports from: the pod manager's pods and the resource
// managers that are on (none reported for one that is off, as upstream).
func (n *agent) podResourcesOptions() podresources.Options {
	opts := podresources.Options{
		Socket:     filepath.Join(n.cfg.RootDir, podresources.DirName, podresources.SocketName),
		Pods:       n.pods,
		GetEnabled: n.cfg.PodResourcesGet,
	}
	if n.cpus != nil {
		opts.CPUs = n.cpus
	}
	if n.memory != nil {
		opts.Memory = n.memory
	}
	if n.devices != nil {
		opts.Devices = n.devices
	}
	if n.dra != nil && n.cfg.PodResourcesDynamicResources {
		opts.DynamicResources = n.dra
	}
	return opts
}
