package dra

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/types"
	drapb "k8s.io/kubelet/pkg/apis/dra/v1beta1"

	"github.com/nodelet/nodelet/internal/lib/metrics"
)

// releaseTimeout bounds the unprepare of a pod being removed.
const releaseTimeout = 2 * time.Minute

// UnpreparePod drops pod uid from its claims, as the terminating pod's sync asks (and
// counts in the histogram, as upstream's). A claim another pod still uses only loses the
// reference; the others are unprepared, one NodeUnprepareResources per driver, and leave the
// cache once their drivers answered. An error leaves those claims referenced by the pod, so a
// later call (the retried sync, the pod's removal, the reconcile loop) tries again.
func (m *Manager) UnpreparePod(ctx context.Context, uid types.UID) (err error) {
	defer func(start time.Time) {
		metrics.ObserveDRAOperation("UnprepareResources", err != nil, time.Since(start))
	}(time.Now())
	return m.unpreparePod(ctx, uid)
}

func (m *Manager) unpreparePod(ctx context.Context, uid types.UID) error {
	if !m.HasPod(uid) {
		// Most pods hold no claim: they do not wait behind another pod's driver call. (The
		// pod's own prepare runs in its own worker, never beside this.)
		return nil
	}
	m.ops.Lock()
	defer m.ops.Unlock()
	batches, last, err := m.dropPod(uid)
	if err != nil {
		return err
	}
	for _, driver := range slices.Sorted(maps.Keys(batches)) {
		if err := m.unprepareWith(ctx, driver, batches[driver]); err != nil {
			return err
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, key := range last {
		delete(m.claims, key)
	}
	if len(last) == 0 {
		return nil
	}
	if err := m.checkpoint(); err != nil {
		return fmt.Errorf("failed to checkpoint claimInfo state: %w", err)
	}
	return nil
}

// dropPod removes uid from the claims other pods share and returns the batches of claims only
// uid used, per driver, with their cache keys.
func (m *Manager) dropPod(uid types.UID) (map[string][]*drapb.Claim, []string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	batches := map[string][]*drapb.Claim{}
	var last []string
	shared := false
	for key, info := range m.claims {
		if !info.PodUIDs.Has(string(uid)) {
			continue
		}
		if info.PodUIDs.Len() > 1 {
			info.PodUIDs.Delete(string(uid))
			shared = true
			continue
		}
		last = append(last, key)
		c := &drapb.Claim{Namespace: info.Namespace, UID: string(info.ClaimUID), Name: info.ClaimName}
		for driver := range info.DriverState {
			batches[driver] = append(batches[driver], c)
		}
	}
	if shared {
		if err := m.checkpoint(); err != nil {
			return nil, nil, fmt.Errorf("failed to checkpoint claimInfo state: %w", err)
		}
	}
	return batches, last, nil
}

func (m *Manager) unprepareWith(ctx context.Context, driver string, claims []*drapb.Claim) error {
	resp, err := m.opts.Plugins.unprepare(ctx, driver, claims)
	if err != nil {
		return fmt.Errorf("NodeUnprepareResources failed: %w", err)
	}
	var errs []error
	for uid, result := range resp.Claims {
		i := indexClaim(claims, uid)
		if i < 0 {
			return fmt.Errorf("NodeUnprepareResources returned result for unknown claim UID %s", uid)
		}
		if result.GetError() != "" {
			errs = append(errs, fmt.Errorf("NodeUnprepareResources failed for claim %s/%s: %s", claims[i].Namespace, claims[i].Name, result.Error))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if left := len(claims) - len(resp.Claims); left != 0 {
		return fmt.Errorf("NodeUnprepareResources left out %d claims", left)
	}
	return nil
}

// indexClaim is the index of the claim with uid in claims, -1 when the driver answered for a
// claim it was not asked about.
func indexClaim(claims []*drapb.Claim, uid string) int {
	return slices.IndexFunc(claims, func(c *drapb.Claim) bool { return c.UID == uid })
}

// HasPod: pod uid still holds prepared (or half-prepared) claims.
func (m *Manager) HasPod(uid types.UID) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, info := range m.claims {
		if info.PodUIDs.Has(string(uid)) {
			return true
		}
	}
	return false
}

// Name is the manager's name as a releaser of removed pods.
func (m *Manager) Name() string { return "dynamic resources" }

// ReleasePod unprepares the claims of a pod removed for good (those its termination did not).
func (m *Manager) ReleasePod(uid types.UID) error {
	ctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
	defer cancel()
	return m.unpreparePod(ctx, uid)
}
