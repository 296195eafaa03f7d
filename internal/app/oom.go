package app

import "github.com/nodelet/nodelet/internal/node/oom"

// startOOM watches the kernel log for OOM kills outside the pods' cgroups (SystemOOM events).
func (n *agent) startOOM() {
	pods := "/k8s.io" // containerd's own parent when nodelet makes no pod cgroups
	if p := n.cm.PodsCgroup(); p != "" {
		pods = p
	}
	w := &oom.Watcher{PodsCgroup: pods, Recorder: n.recorder, NodeRef: gcNodeRef(n.cfg.NodeName), Count: n.ooms.Add}
	n.comps.start("OOM watcher", w.Run)
}
