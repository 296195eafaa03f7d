// Package gc is container garbage collection: it removes dead container instances beyond the
// policy, sandboxes left empty, and the log and state directories of pods that are gone, as
// the kubelet does every minute.
//
// Only this node's pods are touched: several nodelets may share one runtime, and each sandbox
// and container carries the node it was made for (runtime.LabelNode, RunningPod.Node), the
// same rule the sync loop's housekeeping follows.
package gc

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/nodelet/nodelet/internal/runtime/container"
	"github.com/nodelet/nodelet/internal/volumes/mount"
)

// DefaultPeriod is how often a pass runs (the kubelet's container GC period).
const DefaultPeriod = time.Minute

// ReasonContainerGCFailed is the node event reason when a pass fails.
const ReasonContainerGCFailed = "ContainerGCFailed"

// sourcesSettle is how long the sources must have been ready before a pod nodelet does not
// know counts as gone: the merger marks a source seen when it queues the snapshot, a moment
// before the sync loop puts its pods in the pod manager.
const sourcesSettle = 5 * time.Second

// Policy says which dead containers are kept, as the kubelet's deprecated flags set it.
type Policy struct {
	// MinAge: younger dead containers are never removed (--minimum-container-ttl-duration).
	MinAge time.Duration
	// MaxPerPodContainer dead instances are kept per container of a pod; negative means no
	// limit (--maximum-dead-containers-per-container, default 1).
	MaxPerPodContainer int
	// MaxContainers dead instances are kept on the node; negative means no limit
	// (--maximum-dead-containers, default -1).
	MaxContainers int
}

// DefaultPolicy is the kubelet's default.
var DefaultPolicy = Policy{MinAge: 0, MaxPerPodContainer: 1, MaxContainers: -1}

// Options configure a ContainerGC.
type Options struct {
	Policy  Policy
	Runtime container.GarbageSource
	// NodeName: only sandboxes and containers labelled with it are collected.
	NodeName string
	// RootDir holds pod directories under RootDir/pods/<uid>.
	RootDir string
	// PodLogsDir (required: podLogsDir) holds <namespace>_<name>_<uid> log directories;
	// ContainerLogsDir (default /var/log/containers) the per-container symlinks.
	PodLogsDir       string
	ContainerLogsDir string
	// PodExists reports whether nodelet still knows the pod (a source wants it, or its worker
	// has not finished); required.
	PodExists func(types.UID) bool
	// SourcesReady reports whether every pod source has reported; nothing of a gone pod is
	// removed before, nor in the first pass that sees them ready (see sourcesSettle). Nil
	// means always ready.
	SourcesReady func() bool
	// PodTerminated reports whether a pod that still exists has finished for good;
	// DeleteAllUnusedContainers then removes all of its containers and sandboxes. Optional.
	PodTerminated func(types.UID) bool
	// Recorder and NodeRef receive the ContainerGCFailed event; nil drops it.
	Recorder record.EventRecorder
	NodeRef  *v1.ObjectReference
	// Period between passes; default DefaultPeriod.
	Period time.Duration
	// Clock and Mountinfo are for tests (defaults: the real clock, /proc/self/mountinfo).
	Clock     clock.PassiveClock
	Mountinfo string
}

// ContainerGC removes dead containers and what gone pods left behind.
type ContainerGC struct {
	opts Options
	mu   sync.Mutex // one pass at a time: the periodic one or the eviction manager's

	died chan death // from ContainerDied, served by Run

	alwaysReady bool      // no SourcesReady given
	readySince  time.Time // when the sources were first seen ready; zero while they are not
}

// New validates the policy and returns a ContainerGC.
func New(opts Options) (*ContainerGC, error) {
	if opts.Policy.MinAge < 0 {
		return nil, fmt.Errorf("invalid minimum garbage collection age: %v", opts.Policy.MinAge)
	}
	if opts.Runtime == nil || opts.PodExists == nil || opts.PodLogsDir == "" {
		return nil, errors.New("container GC needs a runtime, PodExists and PodLogsDir")
	}
	if opts.ContainerLogsDir == "" {
		opts.ContainerLogsDir = container.DefaultContainerLogsDir
	}
	if opts.Period <= 0 {
		opts.Period = DefaultPeriod
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Mountinfo == "" {
		opts.Mountinfo = mount.Mountinfo
	}
	return &ContainerGC{opts: opts, died: make(chan death, diedQueueLen), alwaysReady: opts.SourcesReady == nil}, nil
}

// sourcesReady reports whether the sources have been ready for sourcesSettle.
func (g *ContainerGC) sourcesReady() bool {
	if g.alwaysReady {
		return true
	}
	if !g.opts.SourcesReady() {
		g.readySince = time.Time{}
		return false
	}
	now := g.opts.Clock.Now()
	if g.readySince.IsZero() {
		g.readySince = now
	}
	return now.Sub(g.readySince) >= sourcesSettle
}

// Run collects once a period, and trims a container's dead instances when it dies (see
// ContainerDied), until ctx ends. A failed pass is logged and reported as a node event; it
// never stops nodelet.
func (g *ContainerGC) Run(ctx context.Context) error {
	var trimming sync.WaitGroup
	trimming.Go(func() { g.trimDeaths(ctx) })
	defer trimming.Wait()
	klog.InfoS("Starting container garbage collection", "period", g.opts.Period, "minAge", g.opts.Policy.MinAge,
		"maxPerPodContainer", g.opts.Policy.MaxPerPodContainer, "maxContainers", g.opts.Policy.MaxContainers)
	wait.NonSlidingUntilWithContext(ctx, g.collectAndReport, g.opts.Period)
	return nil
}

// collectAndReport runs one pass; a failure is logged and posted as a node event.
func (g *ContainerGC) collectAndReport(ctx context.Context) {
	if err := g.GarbageCollect(ctx); err != nil && ctx.Err() == nil {
		klog.ErrorS(err, "Container garbage collection failed")
		if g.opts.Recorder != nil && g.opts.NodeRef != nil {
			g.opts.Recorder.Event(g.opts.NodeRef, v1.EventTypeWarning, ReasonContainerGCFailed, err.Error())
		}
	}
}

// GarbageCollect runs one pass with the policy.
func (g *ContainerGC) GarbageCollect(ctx context.Context) error {
	return g.collect(ctx, false)
}

// DeleteAllUnusedContainers is the eviction manager's pass on disk pressure: the same policy,
// and besides the pods that are gone, pods that have terminated lose all their containers and
// sandboxes too.
func (g *ContainerGC) DeleteAllUnusedContainers(ctx context.Context) error {
	klog.InfoS("Deleting all unused containers")
	return g.collect(ctx, true)
}

// collect is one pass: containers, then sandboxes left without containers, then the log
// directories, dangling log symlinks and pod directories of gone pods. Failing removals only
// log (the next pass retries); a failed listing fails the pass.
func (g *ContainerGC) collect(ctx context.Context, evictTerminated bool) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	pods, err := g.opts.Runtime.GetPods(ctx, true)
	if err != nil {
		return fmt.Errorf("list runtime pods: %w", err)
	}
	p := &pass{
		g: g, pods: pods,
		removedContainers: map[string]bool{}, removedSandboxes: map[string]bool{},
	}
	ready := g.sourcesReady()
	p.gone = func(uid types.UID) bool { return ready && !g.opts.PodExists(uid) }
	p.removeAll = p.gone
	if evictTerminated && g.opts.PodTerminated != nil {
		p.removeAll = func(uid types.UID) bool { return p.gone(uid) || g.opts.PodTerminated(uid) }
	}
	ours := p.ourPods()
	p.evictContainers(ctx, ours)
	p.evictSandboxes(ctx, ours)
	if ready {
		p.evictPodLogDirs()
		p.evictPodDirs()
	}
	p.removeDanglingLogLinks(ctx)
	return nil
}

// pass holds one collection's view of the runtime and what it removed so far.
type pass struct {
	g    *ContainerGC
	pods []*container.RunningPod // every node's
	// gone: nodelet no longer knows the pod; removeAll: all its runtime objects go.
	gone, removeAll   func(types.UID) bool
	removedContainers map[string]bool
	removedSandboxes  map[string]bool
}

func (p *pass) ourPods() []*container.RunningPod {
	var out []*container.RunningPod
	for _, rp := range p.pods {
		if rp.OnNode(p.g.opts.NodeName) {
			out = append(out, rp)
		}
	}
	return out
}

// onRuntime reports the pod UIDs (of any node) the runtime still holds something of after
// this pass's removals.
func (p *pass) onRuntime() map[types.UID]bool {
	held := map[types.UID]bool{}
	for _, rp := range p.pods {
		for _, c := range rp.Containers {
			if !p.removedContainers[c.ID] {
				held[rp.UID] = true
			}
		}
		for _, sb := range rp.Sandboxes {
			if !p.removedSandboxes[sb.ID] {
				held[rp.UID] = true
			}
		}
	}
	return held
}

func (g *ContainerGC) podsDir() string { return filepath.Join(g.opts.RootDir, "pods") }
