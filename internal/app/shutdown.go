package app

import (
	"context"
	"errors"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/internal/node/logind"
	"github.com/nodelet/nodelet/internal/node/shutdown"
	"github.com/nodelet/nodelet/internal/pod/podworkers"
)

// statusFlushTimeout bounds how long a shut-down node waits for its pods' last statuses to
// reach the API server before it exits.
const statusFlushTimeout = 10 * time.Second

// logindReconnect is the pause before watching logind again after the bus went away.
const logindReconnect = time.Second

// buildShutdown makes the graceful node shutdown manager when shutdownGracePeriod (or the
// by-priority form) is set.
func (n *agent) buildShutdown(ctx context.Context, workers *podworkers.PodWorkers) {
	groups := shutdown.Groups(n.cfg.Kubelet)
	if len(groups) == 0 {
		return
	}
	n.shutdown = shutdown.New(groups, shutdown.Deps{
		ActivePods: n.activePods,
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
		StatusChanged: func() { n.updateNodeStatus(ctx) }, // the Ready condition at once

		Event: func(message string) {
			n.recorder.Event(gcNodeRef(n.cfg.NodeName), v1.EventTypeNormal, shutdown.EventReason, message)
		},
	})
}

// shutdownAdmit is admission's check during a node shutdown; nil without graceful shutdown.
func (n *agent) shutdownAdmit() func(*v1.Pod) (bool, string, string) {
	if n.shutdown == nil {
		return nil
	}
	return n.shutdown.Admit
}

// startLogindWatch follows systemd-logind's shutdown signals when logind is on the system bus,
// as upstream: a delay inhibitor lock, pods terminated on PrepareForShutdown. The lock and the
// subscription are in place before it returns (so before healthz answers, when a restarted
// node may be told to shut down at once). Without logind (these machines run no systemd) the
// stop request stays the only cue. A watch that ran and lost the bus is started again, as
// upstream does; one that never started is not.
func (n *agent) startLogindWatch() {
	follower, err := n.followLogind()
	switch {
	case errors.Is(err, logind.ErrNoLogind):
		klog.InfoS("No systemd-logind on the system bus; the stop request (SIGTERM) is the node shutdown cue", "err", err)
		return
	case err != nil:
		klog.ErrorS(err, "Failed to start watching systemd-logind for node shutdown; the stop request (SIGTERM) is the cue")
		return
	}
	reconnected := func(context.Context) (bool, error) {
		if follower, err = n.followLogind(); err != nil {
			klog.V(1).InfoS("systemd-logind is not back yet", "err", err)
		}
		return err == nil, nil
	}
	n.comps.start("logind shutdown watch", func(ctx context.Context) error {
		for {
			err := follower.Run(ctx)
			if ctx.Err() != nil {
				return nil
			}
			klog.V(1).InfoS("Watching systemd-logind for node shutdown again", "err", err)
			if wait.PollUntilContextCancel(ctx, logindReconnect, false, reconnected) != nil {
				return nil // stopping
			}
		}
	})
}

// followLogind connects to logind and sets up following it; the follower's Run closes the
// connection.
func (n *agent) followLogind() (*shutdown.Follower, error) {
	conn, err := logind.Connect()
	if err != nil {
		return nil, err
	}
	follower, err := n.shutdown.Follow(conn, func(d time.Duration) error { return logind.WriteDelayOverride(logind.DropInDir, d) })
	if err != nil {
		conn.Close()
		return nil, err
	}
	return follower, nil
}

// shutDown terminates the pods (graceful node shutdown) and waits for their last statuses to
// be written, so the API shows them Failed/Terminated once nodelet is gone.
func (n *agent) shutDown(ctx context.Context) {
	n.shutdown.Shutdown(ctx)
	if n.cluster == nil {
		return
	}
	written := func(context.Context) (bool, error) { return n.cluster.apiStatus.Written(), nil }
	_ = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, statusFlushTimeout, true, written) // best effort
	n.updateNodeStatus(ctx)
	klog.InfoS("Node shutdown done; nodelet stopping")
}

// updateNodeStatus has the node controller post the node status now and waits for it, for at
// most statusFlushTimeout (it serves requests once the Node is registered); nothing standalone.
func (n *agent) updateNodeStatus(ctx context.Context) {
	if n.cluster == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, statusFlushTimeout)
	defer cancel()
	n.cluster.view.UpdateNow(ctx)
}
