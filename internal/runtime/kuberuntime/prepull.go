package kuberuntime

import (
	"context"
	"time"

	v1 "k8s.io/api/core/v1"
	utilcache "k8s.io/apimachinery/pkg/util/cache"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodelet/nodelet/internal/podspec/timeline"
	"github.com/nodelet/nodelet/internal/runtime/container"
	"github.com/nodelet/nodelet/internal/runtime/images"
)

// prepulledTTL is how long an image outcome waits for the start that uses it; the entry of a
// pod deleted meanwhile just expires.
const prepulledTTL = 5 * time.Minute

// prepulledMax bounds the outcomes kept at once (far above the pods a node starts together).
const prepulledMax = 1024

// imageOutcome is what ensuring one container's image gave: the image reference, or the
// waiting reason and message of the failure.
type imageOutcome struct {
	ref, reason, msg string
	err              error
}

func newPrepulled() *utilcache.LRUExpireCache { return utilcache.NewLRUExpireCache(prepulledMax) }

func prepullKey(pod *v1.Pod, c *v1.Container) string {
	return string(pod.UID) + "/" + c.Name + "/" + c.Image
}

// PullImages ensures the images of the containers the next SyncPod of pod would start, for a
// pod that has to wait before that sync (for a start slot): pods queued behind others pull
// meanwhile, in parallel when pulls are not serialized, instead of one start slot at a time.
// The start then uses each outcome as it is, events included: nothing is pulled or reported
// twice. Restarts held by crash-loop back-off, and images whose outcome is held already, are
// left to the start.
func (m *Manager) PullImages(ctx context.Context, pod *v1.Pod, status *container.PodStatus) {
	if status == nil {
		status = &container.PodStatus{UID: pod.UID, Name: pod.Name, Namespace: pod.Namespace}
	}
	acts := computeActions(pod, status, m.startedFor(pod))
	attempt := acts.attempt
	if !acts.createSandbox && acts.sandbox != nil {
		attempt = acts.sandbox.Attempt
	}
	var cfg *runtimeapi.PodSandboxConfig
	for _, s := range acts.start {
		if s.backoff {
			continue
		}
		if _, held := m.prepulled.Get(prepullKey(pod, s.spec)); held {
			continue
		}
		if cfg == nil {
			// Without the hooks: the pod cgroup is made when the sandbox runs, not ahead of it.
			var err error
			if cfg, err = m.baseSandboxConfig(pod, attempt); err != nil {
				return // the start reports it
			}
		}
		outcome := m.ensureImage(ctx, pod, s.spec, cfg)
		if ctx.Err() != nil {
			return // the pod went away or nodelet stops: a later start pulls afresh
		}
		m.prepulled.Add(prepullKey(pod, s.spec), outcome, prepulledTTL)
	}
}

// pullBesideSandbox ensures the images of the containers SyncPod is about to start while their
// sandbox is being created: neither needs the other, so a first start waits for the longer of
// the two instead of both in turn. The outcomes wait in prepulled for the start (or, if the
// sandbox fails, the next one). Call the returned wait before SyncPod goes on: no pull
// outlives it.
func (m *Manager) pullBesideSandbox(ctx context.Context, pod *v1.Pod, status *container.PodStatus) (wait func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		m.PullImages(ctx, pod, status)
	}()
	return func() { <-done }
}

// image is the outcome for the container's image: the one PullImages got for this start,
// else that of ensuring it now.
func (m *Manager) image(ctx context.Context, pod *v1.Pod, c *v1.Container, sb *sandboxInfo) imageOutcome {
	key := prepullKey(pod, c)
	if outcome, ok := m.prepulled.Get(key); ok {
		m.prepulled.Remove(key)
		return outcome.(imageOutcome)
	}
	return m.ensureImage(ctx, pod, c, sb.config)
}

// ensureImage makes the image present as the container's pull policy says, on pod's timeline.
// The pull carries the sandbox's config, as upstream's does.
func (m *Manager) ensureImage(ctx context.Context, pod *v1.Pod, c *v1.Container, sandbox *runtimeapi.PodSandboxConfig) imageOutcome {
	done := m.begin(pod, timeline.ImagePulled, c.Name, "ImageStatus/PullImage", c.Image)
	var o imageOutcome
	o.ref, o.reason, o.msg, o.err = m.images.EnsureImage(ctx, pod, c, m.pullSecrets(pod), m.pullSandbox(pod, sandbox))
	done("", o.err)
	return o
}

// pullSandbox is the sandbox an image is pulled for: its config, and its runtime handler
// when PullRuntimeHandler says to name it (RuntimeClassInImageCriApi).
func (m *Manager) pullSandbox(pod *v1.Pod, cfg *runtimeapi.PodSandboxConfig) images.Sandbox {
	sb := images.Sandbox{Config: cfg}
	if m.pullHandler {
		// An unknown RuntimeClass fails the sandbox, which reports it; the pull goes without.
		sb.RuntimeHandler, _ = m.handler(pod)
	}
	return sb
}
