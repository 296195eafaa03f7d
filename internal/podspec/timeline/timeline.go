// Package timeline records, in memory, what happened to each pod the node runs and how long
// it took — admission, image pulls, sandbox, containers created and started, kills — so
// "why is my pod slow or stuck?" has an answer on the node itself
// (/debug/pods/{namespace}/{name}/timeline). The pods running now and the last finished ones
// are kept; everything is bounded.
package timeline

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Limits on what is kept.
const (
	keepFinished = 100 // finished pods kept
	maxSteps     = 200 // steps kept per pod: the first ones and the latest
)

// Step names, in the order a pod usually goes through them.
const (
	Admitted         = "admitted"
	Refused          = "refused"
	VolumesMounted   = "volumes mounted"
	ClaimsPrepared   = "claims prepared"
	SandboxCreated   = "sandbox created"
	ImagePulled      = "image ready"
	ContainerCreated = "container created"
	ContainerStarted = "container started"
	StartFailed      = "container start failed"
	ContainerExited  = "container exited"
	BackOff          = "back-off"
	KillRequested    = "kill requested"
	Stopped          = "pod stopped"
)

// Step is one thing that happened to a pod, with the call behind it and how long it took.
type Step struct {
	Name      string    `json:"name"`
	Container string    `json:"container,omitempty"`
	Start     time.Time `json:"start"`
	End       time.Time `json:"end"`
	Call      string    `json:"call,omitempty"`   // the CRI or API call, e.g. "RunPodSandbox"
	Detail    string    `json:"detail,omitempty"` // e.g. the image, the attempt, the IP
	Error     string    `json:"error,omitempty"`
	// InProgress marks a step that has begun and not ended (End is when it was last looked at):
	// a pull or a stop still going on is what a stuck pod waits on.
	InProgress bool `json:"inProgress,omitempty"`

	seq uint64 // identifies a step begun with Begin until it ends
}

// Timeline is one pod's steps, oldest first.
type Timeline struct {
	UID       types.UID `json:"uid"`
	Namespace string    `json:"namespace"`
	Name      string    `json:"name"`
	Finished  bool      `json:"finished"`
	Dropped   int       `json:"droppedSteps,omitempty"` // steps left out past maxSteps
	Steps     []Step    `json:"steps"`

	once map[string]bool // keys of steps recorded with RecordOnce
}

// Recorder is safe for concurrent use. The zero value is not usable; use New. A nil
// Recorder records nothing (--pod-timeline=false).
type Recorder struct {
	mu       sync.Mutex
	pods     map[types.UID]*Timeline
	finished []types.UID // oldest first
	now      func() time.Time
	seq      uint64 // last sequence number given to a begun step
}

// New returns an empty recorder.
func New() *Recorder {
	return &Recorder{pods: map[types.UID]*Timeline{}, now: time.Now}
}

// Record adds a step to pod's timeline; a zero End means it ended when it was recorded.
func (r *Recorder) Record(pod *v1.Pod, s Step) {
	if r == nil || pod == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.add(r.timeline(pod), s)
}

// Begin records s as in progress from now (or s.Start) and returns the func that ends it, with
// the detail and error known at its end ("" keeps s.Detail). A step trimmed out meanwhile stays out.
func (r *Recorder) Begin(pod *v1.Pod, s Step) (end func(detail string, err error)) {
	if r == nil || pod == nil {
		return func(string, error) {}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seq++
	s.seq, s.InProgress, s.End = r.seq, true, time.Time{}
	if s.Start.IsZero() {
		s.Start = r.now()
	}
	t := r.timeline(pod)
	t.Steps = append(t.Steps, s)
	r.trim(t)
	return func(detail string, err error) { r.end(pod.UID, s.seq, detail, err) }
}

// end closes the begun step seq of the pod uid.
func (r *Recorder) end(uid types.UID, seq uint64, detail string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	t := r.pods[uid]
	if t == nil {
		return
	}
	for i := len(t.Steps) - 1; i >= 0; i-- {
		s := &t.Steps[i]
		if s.seq != seq {
			continue
		}
		s.End, s.InProgress, s.seq = r.now(), false, 0
		if detail != "" {
			s.Detail = detail
		}
		if err != nil {
			s.Error = err.Error()
		}
		return
	}
}

// RecordOnce records s unless a step with the same key was recorded for pod before (e.g. one
// "container exited" per container instance, however many syncs see it).
func (r *Recorder) RecordOnce(pod *v1.Pod, key string, s Step) {
	if r == nil || pod == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	t := r.timeline(pod)
	if t.once[key] {
		return
	}
	if t.once == nil {
		t.once = map[string]bool{}
	}
	t.once[key] = true
	r.add(t, s)
}

// timeline is pod's timeline, made on its first step. r.mu is held.
func (r *Recorder) timeline(pod *v1.Pod) *Timeline {
	t := r.pods[pod.UID]
	if t == nil {
		t = &Timeline{UID: pod.UID, Namespace: pod.Namespace, Name: pod.Name}
		r.pods[pod.UID] = t
	}
	return t
}

// add appends the ended step s. r.mu is held.
func (r *Recorder) add(t *Timeline, s Step) {
	if s.End.IsZero() {
		s.End = r.now()
	}
	if s.Start.IsZero() {
		s.Start = s.End
	}
	t.Steps = append(t.Steps, s)
	r.trim(t)
}

// trim keeps the first steps and the latest ones past maxSteps. r.mu is held.
func (r *Recorder) trim(t *Timeline) {
	for len(t.Steps) > maxSteps {
		half := maxSteps / 2
		t.Steps = append(t.Steps[:half], t.Steps[half+1:]...)
		t.Dropped++
	}
}

// Finish marks pod's timeline finished (the pod is gone); the oldest finished ones beyond
// keepFinished are forgotten.
func (r *Recorder) Finish(uid types.UID) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	t := r.pods[uid]
	if t == nil || t.Finished {
		return
	}
	t.Finished = true
	r.finished = append(r.finished, uid)
	for len(r.finished) > keepFinished {
		delete(r.pods, r.finished[0])
		r.finished = r.finished[1:]
	}
}

// Get returns a copy of the timeline of the pod with this namespace and name: the running
// one, else the most recently finished.
func (r *Recorder) Get(namespace, name string) (Timeline, bool) {
	if r == nil {
		return Timeline{}, false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var best *Timeline
	for _, t := range r.pods {
		if t.Namespace != namespace || t.Name != name {
			continue
		}
		if best == nil || (best.Finished && !t.Finished) || (best.Finished == t.Finished && lastStart(t).After(lastStart(best))) {
			best = t
		}
	}
	if best == nil {
		return Timeline{}, false
	}
	out := *best
	out.Steps, out.once = append([]Step(nil), best.Steps...), nil
	now := r.now()
	for i := range out.Steps {
		if out.Steps[i].InProgress {
			out.Steps[i].End = now // so far
		}
		out.Steps[i].seq = 0
	}
	return out, true
}

func lastStart(t *Timeline) time.Time {
	if len(t.Steps) == 0 {
		return time.Time{}
	}
	return t.Steps[len(t.Steps)-1].Start
}

// Handler serves GET /debug/pods/{namespace}/{name}/timeline as JSON.
func (r *Recorder) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		ns, name := req.PathValue("namespace"), req.PathValue("name")
		if r == nil {
			http.Error(w, "pod timelines are not recorded on this node (--pod-timeline=false)", http.StatusNotFound)
			return
		}
		t, ok := r.Get(ns, name)
		if !ok {
			http.Error(w, fmt.Sprintf("no timeline for pod %s/%s on this node", ns, name), http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(t)
	})
}
