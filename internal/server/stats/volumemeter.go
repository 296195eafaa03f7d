package stats

import (
	"context"
	"path/filepath"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/internal/lib/metrics"
)

// meterReconcilePeriod is how often the meter looks for pods to start or stop measuring:
// listing the pods is cheap, and a new pod then has figures within seconds.
const meterReconcilePeriod = 5 * time.Second

// volumeMeter measures the pods' emptyDir volumes in the background, each pod on its own
// jittered period as upstream's per-pod volume stat calculators do, and keeps the figures for
// summaries to read. A request never walks a volume, so any number of them at once cost no
// walk, and a walk longer than the period delays that pod's next figures, nothing else.
type volumeMeter struct {
	rootDir string // emptyDirs live below it
	period  time.Duration
	pods    func() []*v1.Pod
	du      func(ctx context.Context, dir string) (usage, error) // diskUsage; tests count walks

	mu     sync.Mutex
	meters map[types.UID]*podVolumes // the pods being measured, each by one goroutine
}

// podVolumes holds one pod's last figures by volume name (under volumeMeter.mu).
type podVolumes struct {
	figures map[string]measured
}

// measured is a volume's usage and when the walk that found it ended.
type measured struct {
	usage
	at time.Time
}

func newVolumeMeter(rootDir string, period time.Duration, pods func() []*v1.Pod) *volumeMeter {
	return &volumeMeter{rootDir: rootDir, period: period, pods: pods, du: diskUsage, meters: map[types.UID]*podVolumes{}}
}

// Run measures until ctx ends: it starts measuring each pod with an emptyDir as it appears
// and stops (forgetting its figures) when it goes. It returns once every walk has stopped.
func (m *volumeMeter) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	stops := map[types.UID]context.CancelFunc{}
	defer func() {
		for _, stop := range stops {
			stop()
		}
		wg.Wait()
	}()
	wait.UntilWithContext(ctx, func(ctx context.Context) { m.reconcile(ctx, stops, &wg) }, meterReconcilePeriod)
	return nil
}

// reconcile starts a goroutine for each new pod with an emptyDir and stops those of pods gone.
func (m *volumeMeter) reconcile(ctx context.Context, stops map[types.UID]context.CancelFunc, wg *sync.WaitGroup) {
	live := map[types.UID]bool{}
	for _, pod := range m.pods() {
		if !hasEmptyDir(pod) {
			continue
		}
		live[pod.UID] = true
		if stops[pod.UID] != nil {
			continue
		}
		pv := &podVolumes{figures: map[string]measured{}}
		m.mu.Lock()
		m.meters[pod.UID] = pv
		m.mu.Unlock()
		podCtx, stop := context.WithCancel(ctx)
		stops[pod.UID] = stop
		wg.Add(1)
		go func() {
			defer wg.Done()
			// The first walk is at once; then one every period to twice that, as upstream.
			wait.JitterUntilWithContext(podCtx, func(ctx context.Context) { m.measure(ctx, pod, pv) }, m.period, 1.0, true)
		}()
	}
	for uid, stop := range stops {
		if !live[uid] {
			stop()
			delete(stops, uid)
			m.mu.Lock()
			delete(m.meters, uid)
			m.mu.Unlock()
		}
	}
}

// measure walks each of pod's emptyDirs once and stores the figures in pv.
func (m *volumeMeter) measure(ctx context.Context, pod *v1.Pod, pv *podVolumes) {
	for _, vol := range pod.Spec.Volumes {
		if vol.EmptyDir == nil {
			continue
		}
		dir := filepath.Join(m.rootDir, "pods", string(pod.UID), "volumes", emptyDirPlugin, vol.Name)
		start := time.Now()
		u, err := m.du(ctx, dir)
		took := time.Since(start)
		if ctx.Err() != nil {
			return
		}
		metrics.ObserveVolumeStatsWalk(took)
		if err != nil {
			klog.V(4).InfoS("Cannot measure a volume", "path", dir, "err", err)
			continue
		}
		klog.V(5).InfoS("Measured a volume", "pod", klog.KObj(pod), "volume", vol.Name, "bytes", u.bytes, "inodes", u.inodes, "took", took)
		m.mu.Lock()
		pv.figures[vol.Name] = measured{usage: u, at: time.Now()}
		m.mu.Unlock()
	}
}

// get returns the last figures of a pod's volume; false before its first walk ended.
func (m *volumeMeter) get(uid types.UID, volume string) (measured, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	pv, ok := m.meters[uid]
	if !ok {
		return measured{}, false
	}
	f, ok := pv.figures[volume]
	return f, ok
}

func hasEmptyDir(pod *v1.Pod) bool {
	for _, vol := range pod.Spec.Volumes {
		if vol.EmptyDir != nil {
			return true
		}
	}
	return false
}
