package app

import (
	"strings"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodelet/nodelet/internal/podspec/timeline"
)

// probeSteps turns probe results into timeline steps when a probe's result changes ("readiness
// probe successful", "liveness probe failed"), so a pod's timeline shows when it first passed
// and since when it has been failing, without a step per probe run.
type probeSteps struct {
	rec  *timeline.Recorder
	mu   sync.Mutex
	last map[types.UID]map[string]string // per pod: "<type>/<container>" → last result
}

func newProbeSteps(rec *timeline.Recorder) *probeSteps {
	return &probeSteps{rec: rec, last: map[types.UID]map[string]string{}}
}

func (p *probeSteps) result(probeType, result string, pod *v1.Pod, container string) {
	if p.rec == nil {
		return // no timelines recorded
	}
	key := probeType + "/" + container
	p.mu.Lock()
	seen := p.last[pod.UID]
	if seen == nil {
		seen = map[string]string{}
		p.last[pod.UID] = seen
	}
	changed := seen[key] != result
	seen[key] = result
	p.mu.Unlock()
	if changed {
		p.rec.Record(pod, timeline.Step{Name: strings.ToLower(probeType) + " probe " + result, Container: container})
	}
}

// forget drops a gone pod's results.
func (p *probeSteps) forget(uid types.UID) {
	p.mu.Lock()
	delete(p.last, uid)
	p.mu.Unlock()
}
