// Package images makes sure the image a container needs is on the node, pulling it through the
// CRI image service as the container's imagePullPolicy says, with per-image pull back-off.
package images

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/internal/lib/metrics"
	kubecontainer "github.com/nodelet/nodelet/internal/runtime/container"
	"github.com/nodelet/nodelet/internal/runtime/credprovider"
	"github.com/nodelet/nodelet/internal/runtime/cri"
)

// Waiting reasons EnsureImage returns; the pod status shows them on the container.
const (
	ReasonErrImagePull      = "ErrImagePull"
	ReasonImagePullBackOff  = "ImagePullBackOff"
	ReasonErrImageNeverPull = "ErrImageNeverPull"
	ReasonInvalidImageName  = "InvalidImageName"
	// A runtime error starting with one of these names (the CRI's own error names) gives the
	// waiting reason of that name and upstream's wording.
	ReasonRegistryUnavailable       = "RegistryUnavailable"
	ReasonSignatureValidationFailed = "SignatureValidationFailed"
	pullBackOffInitial              = 10 * time.Second
	pullBackOffMax                  = 300 * time.Second
)

// Errors EnsureImage wraps; test with errors.Is.
var (
	ErrImagePull        = errors.New("ErrImagePull")
	ErrImagePullBackOff = errors.New("ImagePullBackOff")
	ErrImageNeverPull   = errors.New("ErrImageNeverPull")
	ErrInvalidImageName = errors.New("InvalidImageName")
)

// Options configure a Manager.
type Options struct {
	// CRI is the runtime's client; its image service calls carry its deadlines (the request
	// timeout bounds a pull, the status timeout a look-up).
	CRI *cri.Client
	// Providers, when set, gives the credentials of credential provider plugins for an image
	// (keyed as docker config keys); they come after the node's docker config.
	Providers func(ctx context.Context, image string) map[string]credprovider.Credential
	// RootDir is the kubelet root dir, the first place the node's docker config
	// (config.json) is looked for; empty skips the node's own credentials altogether.
	RootDir string
	// Recorder receives Pulling/Pulled/Failed/BackOff events; nil drops them.
	Recorder record.EventRecorder
	// Serialize pulls one image at a time (serializeImagePulls; the kubelet default is true);
	// otherwise MaxParallel (maxParallelImagePulls) caps the pulls at once, 0 meaning no cap.
	Serialize   bool
	MaxParallel int
	// PullQPS and PullBurst (registryPullQPS, registryBurst) rate-limit pulls: a pull over the
	// limit fails with "pull QPS exceeded" and backs off. PullQPS 0 means no limit.
	PullQPS   float32
	PullBurst int
	// Backoff holds pull back-off per pod and image; default 10s doubling to 300s.
	Backoff *flowcontrol.Backoff
	// VolumeImages, when set, lists the images of the image volumes of the pods the node
	// holds: ImagesInUse counts them in use, as no container is made from them.
	VolumeImages func() []string
}

// Manager pulls images for containers. Safe for concurrent use.
type Manager struct {
	cri         *cri.Client
	recorder    record.EventRecorder
	backoff     *flowcontrol.Backoff
	pullLock    sync.Locker             // serializes pulls, caps them, or a no-op lock
	pullLimiter flowcontrol.RateLimiter // nil: no rate limit
	node        *nodeConfig             // the node's own credentials; nil for none
	// lastPullErr holds, per back-off key, "reason: message" of the pull that failed last: the
	// back-off message repeats it, as upstream's does.
	lastPullErr sync.Map
	providers   func(ctx context.Context, image string) map[string]credprovider.Credential
	volImages   func() []string
}

// NewManager returns an image manager over opts.CRI.
func NewManager(opts Options) (*Manager, error) {
	if opts.CRI == nil {
		return nil, errors.New("images: no CRI client")
	}
	m := &Manager{
		cri:      opts.CRI,
		recorder: opts.Recorder,
		backoff:  opts.Backoff,
		pullLock: noLock{},
	}
	if opts.RootDir != "" {
		m.node = &nodeConfig{rootDir: opts.RootDir, now: time.Now}
	}
	m.providers, m.volImages = opts.Providers, opts.VolumeImages
	if m.recorder == nil {
		m.recorder = &record.FakeRecorder{} // nil channel: events are dropped
	}
	if m.backoff == nil {
		m.backoff = flowcontrol.NewBackOff(pullBackOffInitial, pullBackOffMax)
	}
	switch {
	case opts.Serialize:
		m.pullLock = &sync.Mutex{}
	case opts.MaxParallel > 0:
		m.pullLock = make(semaphore, opts.MaxParallel)
	}
	if opts.PullQPS > 0 {
		m.pullLimiter = flowcontrol.NewTokenBucketRateLimiter(opts.PullQPS, max(opts.PullBurst, 1))
	}
	return m, nil
}

type noLock struct{}

func (noLock) Lock()   {}
func (noLock) Unlock() {}

// semaphore is a Locker that lets cap(semaphore) holders in at once.
type semaphore chan struct{}

func (s semaphore) Lock()   { s <- struct{}{} }
func (s semaphore) Unlock() { <-s }

// EnsureImage makes the container's image present as its pull policy says and returns the
// image reference (ID) to create the container from. On failure it returns the waiting reason
// (ErrImagePull, ImagePullBackOff, ErrImageNeverPull, InvalidImageName) and a message for the
// container status, and an error wrapping the matching Err* value.
// sb is the sandbox the image is pulled for, handed to the runtime with the pull.
func (m *Manager) EnsureImage(ctx context.Context, pod *v1.Pod, container *v1.Container, pullSecrets []v1.Secret, sb Sandbox) (imageRef, waitReason, msg string, err error) {
	return m.ensure(ctx, pull{
		ref: kubecontainer.ContainerRef(pod, container), pod: pod, image: container.Image,
		policy: pullPolicy(container.ImagePullPolicy, container.Image), what: "container " + container.Name,
	}, pullSecrets, sb)
}

// EnsureVolumeImage is EnsureImage for an image volume's image, with the volume's pull policy:
// as upstream, its events are the pod's (no container is named) and the results are the same.
func (m *Manager) EnsureVolumeImage(ctx context.Context, pod *v1.Pod, vol *v1.ImageVolumeSource, pullSecrets []v1.Secret, sb Sandbox) (imageRef, waitReason, msg string, err error) {
	return m.ensure(ctx, pull{
		ref: kubecontainer.ContainerRef(pod, nil), pod: pod, image: vol.Reference,
		policy: pullPolicy(vol.PullPolicy, vol.Reference), what: "image volume",
	}, pullSecrets, sb)
}

// pull is one image to make present: for whom (the object its events name, and a word for
// the log), and how.
type pull struct {
	ref    *v1.ObjectReference
	pod    *v1.Pod
	image  string
	policy v1.PullPolicy
	what   string
}

func (m *Manager) ensure(ctx context.Context, p pull, pullSecrets []v1.Secret, sb Sandbox) (imageRef, waitReason, msg string, err error) {
	ref, pod, image := p.ref, p.pod, p.image
	if image == "" || strings.ContainsAny(image, " \t\n") {
		msg = fmt.Sprintf("Failed to apply default image tag %q: invalid reference format", image)
		m.recorder.Event(ref, v1.EventTypeWarning, "InspectFailed", msg)
		return "", ReasonInvalidImageName, msg, fmt.Errorf("%w: %s", ErrInvalidImageName, msg)
	}
	presentRef, err := m.imageID(ctx, image)
	if err != nil {
		msg = fmt.Sprintf("Failed to inspect image %q: %v", image, err)
		m.recorder.Event(ref, v1.EventTypeWarning, "InspectFailed", msg)
		return "", ReasonErrImagePull, msg, fmt.Errorf("%w: %s", ErrImagePull, msg)
	}
	if presentRef != "" && p.policy != v1.PullAlways {
		m.recorder.Eventf(ref, v1.EventTypeNormal, "Pulled", "Container image %q already present on machine", image)
		return presentRef, "", "", nil
	}
	if p.policy == v1.PullNever {
		msg = fmt.Sprintf("Container image %q is not present with pull policy of Never", image)
		m.recorder.Event(ref, v1.EventTypeWarning, ReasonErrImageNeverPull, msg)
		return "", ReasonErrImageNeverPull, msg, fmt.Errorf("%w: %s", ErrImageNeverPull, msg)
	}

	backoffKey := string(pod.UID) + "_" + image
	if m.backoff.IsInBackOffSinceUpdate(backoffKey, m.backoff.Clock.Now()) {
		msg = fmt.Sprintf("Back-off pulling image %q", image)
		m.recorder.Event(ref, v1.EventTypeNormal, "BackOff", msg)
		if last, ok := m.lastPullErr.Load(backoffKey); ok {
			msg += ": " + last.(string)
		}
		return "", ReasonImagePullBackOff, msg, fmt.Errorf("%w: %s", ErrImagePullBackOff, msg)
	}
	m.lastPullErr.Delete(backoffKey)
	m.recorder.Eventf(ref, v1.EventTypeNormal, "Pulling", "Pulling image %q", image)
	metrics.ImagePullStarted(pod.UID)
	imageRef, pulled, total, err := m.pull(ctx, pullSpec(pod, image, sb), pullSecrets, sb.Config)
	metrics.ImagePullFinished(pod.UID)
	if err != nil {
		m.backoff.Next(backoffKey, m.backoff.Clock.Now())
		m.recorder.Eventf(ref, v1.EventTypeWarning, "Failed", "Failed to pull image %q: %v", image, err)
		klog.InfoS("Image pull failed", "pod", klog.KObj(pod), "for", p.what, "image", image, "err", err)
		reason, msg := pullFailure(image, err)
		m.lastPullErr.Store(backoffKey, reason+": "+msg)
		return "", reason, msg, fmt.Errorf("%w: %s", ErrImagePull, msg)
	}
	m.backoff.Reset(backoffKey)
	size := m.imageSize(ctx, imageRef)
	metrics.ImagePulled(size, pulled)
	m.recorder.Eventf(ref, v1.EventTypeNormal, "Pulled", "Successfully pulled image %q in %s (%s including waiting). Image size: %d bytes.",
		image, pulled.Round(time.Millisecond), total.Round(time.Millisecond), size)
	return imageRef, "", "", nil
}

// ForgetPod drops the pull back-off and the last pull errors of a removed pod, so a node that
// runs many short-lived pods does not keep one entry per pod and image for ever. A back-off
// entry exists only next to its last error (both are set when a pull fails).
func (m *Manager) ForgetPod(uid types.UID) {
	prefix := string(uid) + "_"
	m.lastPullErr.Range(func(k, _ any) bool {
		if key := k.(string); strings.HasPrefix(key, prefix) {
			m.lastPullErr.Delete(key)
			m.backoff.DeleteEntry(key)
		}
		return true
	})
}

// pullFailure is the waiting reason and message of a failed pull: the runtime's error as it
// is, unless it names the CRI's RegistryUnavailable or SignatureValidationFailed, which upstream
// words for the user.
func pullFailure(image string, err error) (reason, msg string) {
	text := err.Error()
	for _, known := range []struct{ reason, because string }{
		{ReasonRegistryUnavailable, "the registry is unavailable"},
		{ReasonSignatureValidationFailed, "the signature validation failed"},
	} {
		if rest, ok := strings.CutPrefix(text, known.reason); ok {
			return known.reason, fmt.Sprintf("image pull failed for %s because %s%s", image, known.because, rest)
		}
	}
	return ReasonErrImagePull, text
}

// imageSize is the runtime's size of the image, 0 when it cannot say.
func (m *Manager) imageSize(ctx context.Context, imageRef string) uint64 {
	img, err := m.imageStatus(ctx, imageRef)
	if err != nil || img == nil {
		return 0
	}
	return img.Size_
}

// imageID returns the ID of image when the runtime has it, "" when it does not.
func (m *Manager) imageID(ctx context.Context, image string) (string, error) {
	img, err := m.imageStatus(ctx, image)
	if err != nil || img == nil {
		return "", err
	}
	return img.Id, nil
}

// ImageUser returns the user an image runs as: its uid when numeric, else its user name.
func (m *Manager) ImageUser(ctx context.Context, image string) (*int64, string, error) {
	img, err := m.imageStatus(ctx, image)
	if err != nil {
		return nil, "", err
	}
	if img == nil {
		return nil, "", fmt.Errorf("image %s not present", image)
	}
	if uid := img.GetUid(); uid != nil {
		return &uid.Value, "", nil
	}
	return nil, img.GetUsername(), nil
}

// imageStatus is the runtime's record of image, nil when it has none.
func (m *Manager) imageStatus(ctx context.Context, image string) (*cri.Image, error) {
	return m.cri.ImageStatus(ctx, image)
}

// pull pulls image, trying each matching credential and then anonymously. It returns the image
// reference, the time the pull took and the time including waiting for the pull lock.
func (m *Manager) pull(ctx context.Context, spec *cri.ImageSpec, pullSecrets []v1.Secret, sandbox *cri.PodSandboxConfig) (string, time.Duration, time.Duration, error) {
	image := spec.Image
	if m.pullLimiter != nil && !m.pullLimiter.TryAccept() {
		return "", 0, 0, errors.New("pull QPS exceeded")
	}
	queued := time.Now()
	m.pullLock.Lock()
	defer m.pullLock.Unlock()
	started := time.Now()

	// As upstream: every matching credential in turn, anonymous only when none matches.
	auths := credentialsFor(image, pullSecrets, m.nodeKeyring(ctx, image))
	if len(auths) == 0 {
		auths = []*cri.AuthConfig{nil}
	}
	var errs []error
	for _, auth := range auths {
		ref, err := m.pullOnce(ctx, spec, auth, sandbox)
		if err == nil {
			return ref, time.Since(started), time.Since(queued), nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return "", 0, 0, errors.Join(errs...)
}

func (m *Manager) pullOnce(ctx context.Context, spec *cri.ImageSpec, auth *cri.AuthConfig, sandbox *cri.PodSandboxConfig) (string, error) {
	image := spec.Image
	ref, err := m.cri.PullImage(ctx, spec, auth, sandbox)
	if err != nil {
		// As upstream's CRI client: an Unknown code says nothing, so the runtime's own text is
		// the error (and a RegistryUnavailable / SignatureValidationFailed prefix stays first).
		if st, ok := status.FromError(err); ok && st.Code() == codes.Unknown {
			return "", errors.New(st.Message())
		}
		return "", err
	}
	if ref == "" {
		return "", fmt.Errorf("runtime returned no reference for image %q", image)
	}
	return ref, nil
}

// pullPolicy is the policy set, defaulted as the API server would: Always for an untagged or
// :latest image, IfNotPresent otherwise.
func pullPolicy(set v1.PullPolicy, image string) v1.PullPolicy {
	if set != "" {
		return set
	}
	if imageTag(image) == "latest" {
		return v1.PullAlways
	}
	return v1.PullIfNotPresent
}

// imageTag returns the tag of image, "latest" when it has none, "" when it is pinned by digest.
func imageTag(image string) string {
	if strings.Contains(image, "@") {
		return ""
	}
	name := image[strings.LastIndex(image, "/")+1:]
	if i := strings.LastIndex(name, ":"); i >= 0 {
		return name[i+1:]
	}
	return "latest"
}

// nodeKeyring is the node's docker config plus what credential provider plugins give for image.
func (m *Manager) nodeKeyring(ctx context.Context, image string) keyring {
	keys := keyring{}
	for k, auths := range m.node.keyring() {
		keys[k] = append(keys[k], auths...)
	}
	if m.providers != nil {
		for k, c := range m.providers(ctx, image) {
			keys[k] = append(keys[k], dockerAuth{Username: c.Username, Password: c.Password})
		}
	}
	return keys
}

// Sandbox is the pod sandbox an image is pulled for: its config goes with the pull as
// upstream sends it, and a non-empty RuntimeHandler names the runtime handler in the image
// spec (runtimes with a snapshotter per handler pull into the right one). The zero value
// sends neither.
type Sandbox struct {
	Config         *cri.PodSandboxConfig
	RuntimeHandler string
}

// pullSpec is the image spec of a pull for pod: the image, the pod's annotations (which
// runtimes may act on, as upstream passes them) and the sandbox's runtime handler.
func pullSpec(pod *v1.Pod, image string, sb Sandbox) *cri.ImageSpec {
	annotations := make(map[string]string, len(pod.Annotations))
	for k, v := range pod.Annotations {
		annotations[k] = v
	}
	return &cri.ImageSpec{Image: image, Annotations: annotations, RuntimeHandler: sb.RuntimeHandler}
}

// Name names the per-pod state: the pod's pull back-off and last pull errors.
func (m *Manager) Name() string { return "image pull state" }

// ReleasePod forgets the pod's pull state (ForgetPod).
func (m *Manager) ReleasePod(uid types.UID) error {
	m.ForgetPod(uid)
	return nil
}
