// Package dra is the node side of Dynamic Resource Allocation: the registry of the DRA drivers'
// kubelet plugins (registered through the plugin watcher) and the manager that prepares a
// pod's ResourceClaims with their drivers before its sandbox is made, hands the prepared
// devices' CDI IDs to the containers that reference the claims, and unprepares a claim once no
// pod on the node uses it. Prepared claims are checkpointed in upstream's format.
package dra

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
	drapb "k8s.io/kubelet/pkg/apis/dra/v1beta1"

	"github.com/nodelet/nodelet/internal/lib/kubeclient"
	"github.com/nodelet/nodelet/internal/lib/metrics"
)

const (
	// reconcilePeriod is how often claims of pods that are gone are unprepared (upstream's).
	reconcilePeriod = 60 * time.Second
	// FailedPrepare is the event reason of a pod whose claims could not be prepared; the pod
	// waits and its sync is retried.
	FailedPrepare = "FailedPrepareDynamicResources"
)

// Options configure a Manager.
type Options struct {
	// StateDir holds the checkpoint (the root directory, as upstream).
	StateDir string
	// Client reads the pods' ResourceClaims; nil in standalone mode, where no claim can be
	// prepared.
	Client  kubeclient.Interface
	Plugins *Plugins
	// InUse lists the pods that may still use their claims: the active pods and those with a
	// running container.
	InUse func() []types.UID
	// SourcesReady: every pod source's first snapshot was handled; until then the reconcile
	// loop unprepares nothing (after a restart, the checkpointed pods are not known yet).
	SourcesReady func() bool
	// Period overrides reconcilePeriod (tests).
	Period time.Duration
}

// Manager prepares and unprepares the pods' claims. It is the runtime's prepare hook (before
// the sandbox), a container hook (CDI devices) and a releaser of removed pods.
type Manager struct {
	opts Options

	ops sync.Mutex // one prepare or unprepare at a time: they read and write the same claims

	mu     sync.Mutex
	claims map[string]*claimInfo // by namespace/name
}

// New restores the claims of the checkpoint in opts.StateDir.
func New(opts Options) (*Manager, error) {
	states, err := readCheckpoint(opts.StateDir)
	if err != nil {
		return nil, fmt.Errorf("reading the DRA manager's checkpoint: %w", err)
	}
	if opts.Period == 0 {
		opts.Period = reconcilePeriod
	}
	m := &Manager{opts: opts, claims: map[string]*claimInfo{}}
	for _, st := range states {
		if st.PodUIDs == nil {
			st.PodUIDs = sets.New[string]()
		}
		m.claims[st.Namespace+"/"+st.ClaimName] = &claimInfo{claimState: st, prepared: restoredPrepared(st)}
	}
	if len(states) > 0 {
		klog.InfoS("Restored the prepared ResourceClaims", "claims", len(states))
	}
	return m, nil
}

// Run unprepares, every period, the claims of pods that no longer use them (those whose
// termination did not, and those that went while nodelet was down).
func (m *Manager) Run(ctx context.Context) error {
	t := time.NewTicker(m.opts.Period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			m.reconcile(ctx)
		}
	}
}

func (m *Manager) reconcile(ctx context.Context) {
	if m.opts.SourcesReady == nil || !m.opts.SourcesReady() {
		return
	}
	inUse := sets.New[types.UID]()
	if m.opts.InUse != nil {
		inUse.Insert(m.opts.InUse()...)
	}
	gone := sets.New[types.UID]()
	m.mu.Lock()
	for _, c := range m.claims {
		for uid := range c.PodUIDs {
			if !inUse.Has(types.UID(uid)) {
				gone.Insert(types.UID(uid))
			}
		}
	}
	m.mu.Unlock()
	for _, uid := range sets.List(gone) {
		if err := m.unpreparePod(ctx, uid); err != nil {
			klog.InfoS("Unpreparing the claims of a pod that is gone failed; retrying", "podUID", uid, "err", err)
		}
	}
}

// PrepareFailure is the reason and action of the event a PreparePod error is posted with.
func (m *Manager) PrepareFailure() (reason, action string) {
	return FailedPrepare, "prepare dynamic resources"
}

// PreparePod makes sure every claim of pod is allocated, reserved for it and prepared by its
// drivers: one NodePrepareResources per driver for the claims not prepared yet. An error keeps
// the pod waiting; the sync tries again.
func (m *Manager) PreparePod(ctx context.Context, pod *v1.Pod) (err error) {
	// Every pod start counts in the histogram, as upstream's.
	defer func(start time.Time) { metrics.ObserveDRAOperation("PrepareResources", err != nil, time.Since(start)) }(time.Now())
	if len(pod.Spec.ResourceClaims) == 0 {
		return nil
	}
	m.ops.Lock()
	defer m.ops.Unlock()
	return m.prepare(ctx, pod)
}

func (m *Manager) prepare(ctx context.Context, pod *v1.Pod) error {
	batches := map[string][]*drapb.Claim{}
	pending := map[string]*claimInfo{} // by claim UID
	for i := range pod.Spec.ResourceClaims {
		info, err := m.admitClaim(ctx, pod, &pod.Spec.ResourceClaims[i])
		if err != nil {
			return err
		}
		if info == nil || info.prepared {
			continue
		}
		pending[string(info.ClaimUID)] = info
		c := &drapb.Claim{Namespace: info.Namespace, UID: string(info.ClaimUID), Name: info.ClaimName}
		for driver := range info.DriverState {
			batches[driver] = append(batches[driver], c)
		}
	}
	for _, driver := range slices.Sorted(maps.Keys(batches)) {
		if err := m.prepareWith(ctx, driver, batches[driver], pending); err != nil {
			return err
		}
	}
	if len(pending) == 0 {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, info := range pending {
		info.prepared = true
	}
	if err := m.checkpoint(); err != nil {
		return fmt.Errorf("failed to checkpoint claimInfo state: %w", err)
	}
	return nil
}

// admitClaim fetches the claim behind pc, checks it may be used by pod and adds pod to its
// cache entry; nil when the control plane decided the pod needs no claim there.
func (m *Manager) admitClaim(ctx context.Context, pod *v1.Pod, pc *v1.PodResourceClaim) (*claimInfo, error) {
	name, mustCheckOwner, err := claimName(pod, pc)
	if err != nil {
		return nil, fmt.Errorf("prepare resource claim: %w", err)
	}
	if name == "" {
		return nil, nil
	}
	if m.opts.Client == nil {
		return nil, fmt.Errorf("ResourceClaim %s referenced by pod %s cannot be read: nodelet runs without an API server", name, pod.Name)
	}
	claim, err := m.opts.Client.ResourceV1beta1().ResourceClaims(pod.Namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("failed to fetch ResourceClaim %s referenced by pod %s: %w", name, pod.Name, err)
	}
	if mustCheckOwner {
		if err := checkOwner(pod, claim); err != nil {
			return nil, err
		}
	}
	if !reservedFor(pod, claim) {
		return nil, fmt.Errorf("pod %s(%s) is not allowed to use resource claim %s(%s)", pod.Name, pod.UID, name, claim.UID)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	key := claim.Namespace + "/" + claim.Name
	info := m.claims[key]
	if info != nil && info.PodUIDs.Has(string(pod.UID)) {
		return info, nil // a retried sync: nothing new to record
	}
	if info == nil {
		if info, err = newClaimInfo(claim); err != nil {
			return nil, err
		}
		m.claims[key] = info
	}
	info.PodUIDs.Insert(string(pod.UID))
	if err := m.checkpoint(); err != nil {
		return nil, fmt.Errorf("failed to checkpoint claimInfo state: %w", err)
	}
	return info, nil
}

// prepareWith has driver prepare claims and records the devices it prepared for each.
func (m *Manager) prepareWith(ctx context.Context, driver string, claims []*drapb.Claim, pending map[string]*claimInfo) error {
	resp, err := m.opts.Plugins.prepare(ctx, driver, claims)
	if err != nil {
		return fmt.Errorf("NodePrepareResources failed: %w", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for uid, result := range resp.Claims {
		info := pending[uid]
		if info == nil || indexClaim(claims, uid) < 0 {
			return fmt.Errorf("NodePrepareResources returned result for unknown claim UID %s", uid)
		}
		if result.GetError() != "" {
			return fmt.Errorf("NodePrepareResources failed for claim %s/%s: %s", info.Namespace, info.ClaimName, result.Error)
		}
		// The driver's answer replaces what an earlier, failed attempt recorded.
		var devices []device
		for _, d := range result.GetDevices() {
			devices = append(devices, device{PoolName: d.PoolName, DeviceName: d.DeviceName,
				RequestNames: d.RequestNames, CDIDeviceIDs: d.CDIDeviceIDs})
		}
		info.DriverState[driver] = driverState{Devices: devices}
	}
	if left := len(claims) - len(resp.Claims); left != 0 {
		return fmt.Errorf("NodePrepareResources left out %d claims", left)
	}
	return nil
}

// checkpoint writes the cache; m.mu is held.
func (m *Manager) checkpoint() error {
	states := make([]claimState, 0, len(m.claims))
	for _, key := range slices.Sorted(maps.Keys(m.claims)) {
		states = append(states, m.claims[key].claimState)
	}
	return writeCheckpoint(m.opts.StateDir, states)
}

// ApplyContainer adds the CDI devices of the claims c references (all of a claim's devices, or
// those of the named request) to its config.
func (m *Manager) ApplyContainer(_ context.Context, pod *v1.Pod, c *v1.Container, cfg *runtimeapi.ContainerConfig) error {
	if len(c.Resources.Claims) == 0 {
		return nil
	}
	have := sets.New[string]()
	for _, d := range cfg.CDIDevices {
		have.Insert(d.Name)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for i := range pod.Spec.ResourceClaims {
		pc := &pod.Spec.ResourceClaims[i]
		name, _, err := claimName(pod, pc)
		if err != nil {
			return fmt.Errorf("list resource claims: %w", err)
		}
		if name == "" {
			continue
		}
		for _, rc := range c.Resources.Claims {
			if rc.Name != pc.Name {
				continue
			}
			info := m.claims[pod.Namespace+"/"+name]
			if info == nil {
				return fmt.Errorf("unable to get claim info for claim %s in namespace %s", name, pod.Namespace)
			}
			for _, id := range info.cdiIDs(rc.Request) {
				if !have.Has(id) {
					have.Insert(id)
					cfg.CDIDevices = append(cfg.CDIDevices, &runtimeapi.CDIDevice{Name: id})
				}
			}
		}
	}
	return nil
}
