package node

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/nodelet/nodelet/internal/lib/kubeclient"
)

// Lease renewal retries back off from 200ms to 7s, but never past the next renewal.
const (
	leaseBackoffStart = 200 * time.Millisecond
	leaseBackoffMax   = 7 * time.Second
)

// LeaseController keeps kube-node-lease/<node> renewed: the node's cheap heartbeat. The node
// lifecycle controller marks the node unreachable when the Lease expires.
type LeaseController struct {
	client    kubeclient.Interface
	nodeName  string
	duration  int32
	interval  time.Duration
	clock     clock.WithTicker
	onFailure func()

	latest *coordinationv1.Lease // owned by the Run goroutine
}

// NewLeaseController returns a LeaseController renewing every quarter of the lease duration
// through deps.Heartbeat.
func NewLeaseController(opts Options, deps Deps) (*LeaseController, error) {
	opts, deps = opts.withDefaults(), deps.withDefaults()
	if opts.NodeName == "" || deps.Heartbeat == nil {
		return nil, errors.New("node: the lease controller needs NodeName and a Heartbeat client")
	}
	return &LeaseController{
		client:    deps.Heartbeat,
		nodeName:  opts.NodeName,
		duration:  opts.LeaseDurationSeconds,
		interval:  time.Duration(opts.LeaseDurationSeconds) * time.Second / 4,
		clock:     deps.Clock,
		onFailure: deps.OnRepeatedHeartbeatFailure,
	}, nil
}

// Run renews the Lease now and every renewal interval until ctx ends.
func (l *LeaseController) Run(ctx context.Context) error {
	ticker := l.clock.NewTicker(l.interval)
	defer ticker.Stop()
	for {
		l.sync(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C():
		}
	}
}

// sync renews the Lease, retrying with back-off until it works or the next renewal is due.
func (l *LeaseController) sync(ctx context.Context) {
	deadline := l.clock.Now().Add(l.interval)
	backoff := wait.Backoff{Duration: leaseBackoffStart, Factor: 2, Cap: leaseBackoffMax, Steps: math.MaxInt32}
	nextDelay := backoff.DelayFunc()
	for attempt := 1; ; attempt++ {
		err := l.renew(ctx)
		if err == nil || ctx.Err() != nil {
			return
		}
		klog.ErrorS(err, "Unable to renew the node lease, will retry", "node", l.nodeName, "attempt", attempt)
		if attempt > 1 && l.onFailure != nil {
			l.onFailure()
		}
		delay := nextDelay()
		if !l.clock.Now().Add(delay).Before(deadline) {
			return // the next tick tries again
		}
		select {
		case <-ctx.Done():
			return
		case <-l.clock.After(delay):
		}
	}
}

// renew makes one attempt: read or create the Lease if we have no current copy, then update
// its renew time. A conflict or a vanished Lease drops our copy so the next attempt re-reads.
func (l *LeaseController) renew(ctx context.Context) error {
	leases := l.client.CoordinationV1().Leases(LeaseNamespace)
	if l.latest == nil {
		lease, created, err := l.getOrCreate(ctx)
		if err != nil {
			return err
		}
		l.latest = lease
		if created {
			return nil // a new Lease is already fresh
		}
	}
	lease := l.latest.DeepCopy()
	l.fill(ctx, lease)
	updated, err := leases.Update(ctx, lease, metav1.UpdateOptions{})
	if err != nil {
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			l.latest = nil
		}
		return fmt.Errorf("updating lease: %w", err)
	}
	l.latest = updated
	return nil
}

func (l *LeaseController) getOrCreate(ctx context.Context) (*coordinationv1.Lease, bool, error) {
	leases := l.client.CoordinationV1().Leases(LeaseNamespace)
	lease, err := leases.Get(ctx, l.nodeName, metav1.GetOptions{})
	if err == nil {
		return lease, false, nil
	}
	if !apierrors.IsNotFound(err) {
		return nil, false, fmt.Errorf("getting lease: %w", err)
	}
	lease = &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: l.nodeName, Namespace: LeaseNamespace}}
	l.fill(ctx, lease)
	created, err := leases.Create(ctx, lease, metav1.CreateOptions{})
	if err != nil {
		return nil, false, fmt.Errorf("creating lease: %w", err)
	}
	return created, true, nil
}

// fill sets holder, duration and renew time, and makes the Node the Lease's owner once the
// Node exists, so deleting the Node deletes its Lease.
func (l *LeaseController) fill(ctx context.Context, lease *coordinationv1.Lease) {
	holder, duration := l.nodeName, l.duration
	renew := metav1.NewMicroTime(l.clock.Now())
	lease.Spec.HolderIdentity, lease.Spec.LeaseDurationSeconds, lease.Spec.RenewTime = &holder, &duration, &renew
	if len(lease.OwnerReferences) > 0 {
		return
	}
	node, err := l.client.CoreV1().Nodes().Get(ctx, l.nodeName, metav1.GetOptions{})
	if err != nil {
		klog.V(2).InfoS("Node lease has no owner yet: cannot read the Node", "node", l.nodeName, "err", err)
		return
	}
	lease.OwnerReferences = []metav1.OwnerReference{{
		APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID,
	}}
}
