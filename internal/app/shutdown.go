package app

import (
	"context"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/internal/admission"
	"github.com/nodelet/nodelet/internal/podworkers"
	"github.com/nodelet/nodelet/internal/shutdown"
)

// statusFlushTimeout bounds how long a shut-down node waits for its pods' last statuses to
// reach the API server before it exits.
const statusFlushTimeout = 10 * time.Second

// buildShutdown makes the graceful node shutdown manager when shutdownGracePeriod (or the
// by-priority form) is set; its admission check goes into admit.
func (n *agent) buildShutdown(ctx context.Context, workers *podworkers.PodWorkers, admit *admission.Admitter) {
	groups := shutdown.Groups(n.cfg.Kubelet)
	if len(groups) == 0 {
		return
	}
	n.shutdown = shutdown.New(groups, shutdown.Deps{
		ActivePods: func() []*v1.Pod { return n.activePods(workers) },
		Kill: func(p *v1.Pod, grace int64, setStatus func(*v1.PodStatus)) {
			st, _ := n.statuses.Get(p.UID)
			st = *st.DeepCopy()
			setStatus(&st)
			n.statuses.Set(p, st)
			workers.UpdatePod(podworkers.UpdateOptions{Type: podworkers.Kill, Pod: p, Kill: &podworkers.KillOptions{GracePeriod: &grace}})
		},
		Gone: func(p *v1.Pod) bool {
			state, ok := workers.State(p.UID)
			return !ok || (state != podworkers.Syncing && state != podworkers.Terminating)
		},
		ShuttingDown: func() {
			if n.cluster != nil && n.cluster.node != nil {
				n.cluster.node.UpdateStatusNow(ctx) // NotReady at once, not at the next update
			}
		},
	})
	admit.Shutdown = n.shutdown.Admit
}

// shutDown terminates the pods (graceful node shutdown) and waits for their last statuses to
// be written, so the API shows them Failed/Terminated once nodelet is gone.
func (n *agent) shutDown(ctx context.Context) {
	n.shutdown.Shutdown(ctx)
	if n.cluster == nil {
		return
	}
	deadline := time.Now().Add(statusFlushTimeout)
	for !n.cluster.apiStatus.Written() && time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(100 * time.Millisecond)
	}
	n.cluster.node.UpdateStatusNow(ctx)
	klog.InfoS("Node shutdown done; nodelet stopping")
}
