package images

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/flowcontrol"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodelet/nodelet/internal/runtime/container"
	"github.com/nodelet/nodelet/internal/runtime/cri"
	"github.com/nodelet/nodelet/internal/runtime/cri/fakecri"
)

type env struct {
	fake     *fakecri.Fake
	client   runtimeapi.ImageServiceClient
	recorder *record.FakeRecorder
	clock    *clocktesting.FakeClock
	mgr      *Manager
}

func newEnv(t *testing.T) *env {
	t.Helper()
	fake, endpoint := fakecri.Start(t)
	conn, err := grpc.NewClient(endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	e := &env{
		fake:     fake,
		client:   runtimeapi.NewImageServiceClient(conn),
		recorder: record.NewFakeRecorder(100),
		clock:    clocktesting.NewFakeClock(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)),
	}
	e.mgr, err = NewManager(Options{
		CRI: cri.New(runtimeapi.NewRuntimeServiceClient(conn), e.client, 0), Recorder: e.recorder, Serialize: true,
		Backoff: flowcontrol.NewFakeBackOff(10*time.Second, 300*time.Second, e.clock),
	})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *env) events() []string {
	var out []string
	for {
		select {
		case ev := <-e.recorder.Events:
			out = append(out, ev)
		default:
			return out
		}
	}
}

func testPod(image string, policy v1.PullPolicy) (*v1.Pod, *v1.Container) {
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-1"},
		Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "app", Image: image, ImagePullPolicy: policy}}},
	}
	return pod, &pod.Spec.Containers[0]
}

func hasEvent(events []string, prefix string) bool {
	for _, ev := range events {
		if strings.HasPrefix(ev, prefix) {
			return true
		}
	}
	return false
}

func TestEnsureImagePolicies(t *testing.T) {
	const img = "nodelet.local/busybox:1.36"
	tests := []struct {
		name       string
		policy     v1.PullPolicy
		present    bool
		wantPulls  int
		wantReason string
		wantErr    error
		wantEvent  string
	}{
		{"IfNotPresent present", v1.PullIfNotPresent, true, 0, "", nil, `Normal Pulled Container image "` + img + `" already present on machine`},
		{"IfNotPresent missing", v1.PullIfNotPresent, false, 1, "", nil, `Normal Pulled Successfully pulled image "` + img + `" in `},
		{"Always present", v1.PullAlways, true, 1, "", nil, `Normal Pulling Pulling image "` + img + `"`},
		{"Never present", v1.PullNever, true, 0, "", nil, `Normal Pulled Container image`},
		{"Never missing", v1.PullNever, false, 0, ReasonErrImageNeverPull, ErrImageNeverPull,
			`Warning ErrImageNeverPull Container image "` + img + `" is not present with pull policy of Never`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			if tt.present {
				e.fake.AddImage(img)
			}
			pod, c := testPod(img, tt.policy)
			ref, reason, _, err := e.mgr.EnsureImage(context.Background(), pod, c, nil, Sandbox{})
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if reason != tt.wantReason {
				t.Errorf("reason = %q, want %q", reason, tt.wantReason)
			}
			if tt.wantErr == nil && ref != fakecri.ImageID(img) {
				t.Errorf("ref = %q, want %q", ref, fakecri.ImageID(img))
			}
			if got := e.fake.CountCalls("PullImage"); got != tt.wantPulls {
				t.Errorf("PullImage calls = %d, want %d", got, tt.wantPulls)
			}
			if evs := e.events(); !hasEvent(evs, tt.wantEvent) {
				t.Errorf("events %q lack %q", evs, tt.wantEvent)
			}
		})
	}
}

func TestDefaultPullPolicy(t *testing.T) {
	for image, want := range map[string]v1.PullPolicy{
		"busybox":                         v1.PullAlways,
		"busybox:latest":                  v1.PullAlways,
		"localhost:5000/busybox":          v1.PullAlways,
		"localhost:5000/busybox:1.36":     v1.PullIfNotPresent,
		"nodelet.local/busybox:1.36":      v1.PullIfNotPresent,
		"busybox@sha256:0123456789abcdef": v1.PullIfNotPresent,
	} {
		if got := pullPolicy("", image); got != want {
			t.Errorf("pullPolicy(%q) = %s, want %s", image, got, want)
		}
	}
}

func TestPullFailureBacksOff(t *testing.T) {
	const img = "nodelet.local/missing:1"
	e := newEnv(t)
	e.fake.SetPullError(img, errors.New("registry unreachable"))
	pod, c := testPod(img, v1.PullIfNotPresent)
	ctx := context.Background()

	_, reason, msg, err := e.mgr.EnsureImage(ctx, pod, c, nil, Sandbox{})
	if !errors.Is(err, ErrImagePull) || reason != ReasonErrImagePull || msg != "registry unreachable" {
		t.Fatalf("first failure: reason %q msg %q err %v; want the runtime's error as the message", reason, msg, err)
	}
	if evs := e.events(); !hasEvent(evs, `Warning Failed Failed to pull image "`+img+`"`) {
		t.Errorf("events %q lack Failed", evs)
	}

	e.clock.Step(5 * time.Second)
	_, reason, msg, err = e.mgr.EnsureImage(ctx, pod, c, nil, Sandbox{})
	if !errors.Is(err, ErrImagePullBackOff) || reason != ReasonImagePullBackOff || msg != `Back-off pulling image "`+img+`": ErrImagePull: registry unreachable` {
		t.Fatalf("during back-off: reason %q msg %q err %v", reason, msg, err)
	}
	if got := e.fake.CountCalls("PullImage"); got != 1 {
		t.Errorf("PullImage calls during back-off = %d, want 1", got)
	}
	if evs := e.events(); !hasEvent(evs, `Normal BackOff Back-off pulling image "`+img+`"`) {
		t.Errorf("events %q lack BackOff", evs)
	}

	e.clock.Step(6 * time.Second) // 11s after the failure: the 10s back-off is over
	if _, reason, _, _ = e.mgr.EnsureImage(ctx, pod, c, nil, Sandbox{}); reason != ReasonErrImagePull {
		t.Fatalf("after back-off: reason %q, want a new pull that fails", reason)
	}
	e.clock.Step(11 * time.Second) // back-off doubled to 20s
	if _, reason, _, _ = e.mgr.EnsureImage(ctx, pod, c, nil, Sandbox{}); reason != ReasonImagePullBackOff {
		t.Fatalf("11s into a 20s back-off: reason %q", reason)
	}

	e.fake.SetPullError(img, nil)
	e.clock.Step(10 * time.Second)
	ref, reason, _, err := e.mgr.EnsureImage(ctx, pod, c, nil, Sandbox{})
	if err != nil || reason != "" || ref != fakecri.ImageID(img) {
		t.Fatalf("after recovery: ref %q reason %q err %v", ref, reason, err)
	}
	if got := e.fake.CountCalls("PullImage"); got != 3 {
		t.Errorf("PullImage calls = %d, want 3", got)
	}
}

func TestPullFailureNamedByTheRuntime(t *testing.T) {
	const img = "nodelet.local/signed:1"
	e := newEnv(t)
	e.fake.SetPullError(img, errors.New("SignatureValidationFailed: no signature from a trusted key"))
	pod, c := testPod(img, v1.PullIfNotPresent)
	_, reason, msg, err := e.mgr.EnsureImage(context.Background(), pod, c, nil, Sandbox{})
	want := "image pull failed for " + img + " because the signature validation failed: no signature from a trusted key"
	if !errors.Is(err, ErrImagePull) || reason != ReasonSignatureValidationFailed || msg != want {
		t.Fatalf("reason %q msg %q err %v; want %s %q", reason, msg, err, ReasonSignatureValidationFailed, want)
	}
	e.clock.Step(time.Second)
	if _, _, msg, _ = e.mgr.EnsureImage(context.Background(), pod, c, nil, Sandbox{}); !strings.HasSuffix(msg, ": SignatureValidationFailed: "+want) {
		t.Fatalf("back-off message %q does not repeat the failure", msg)
	}
	if reason, msg := pullFailure(img, errors.New("RegistryUnavailable")); reason != ReasonRegistryUnavailable ||
		msg != "image pull failed for "+img+" because the registry is unavailable" {
		t.Errorf("RegistryUnavailable: reason %q msg %q", reason, msg)
	}
}

func TestInvalidImageName(t *testing.T) {
	e := newEnv(t)
	pod, c := testPod("", v1.PullIfNotPresent)
	if _, reason, _, err := e.mgr.EnsureImage(context.Background(), pod, c, nil, Sandbox{}); !errors.Is(err, ErrInvalidImageName) || reason != ReasonInvalidImageName {
		t.Fatalf("reason %q err %v", reason, err)
	}
}

// slowPulls counts pulls in flight.
type slowPulls struct {
	runtimeapi.ImageServiceClient
	active, maxActive atomic.Int32
}

func (s *slowPulls) PullImage(ctx context.Context, req *runtimeapi.PullImageRequest, opts ...grpc.CallOption) (*runtimeapi.PullImageResponse, error) {
	n := s.active.Add(1)
	defer s.active.Add(-1)
	for {
		old := s.maxActive.Load()
		if n <= old || s.maxActive.CompareAndSwap(old, n) {
			break
		}
	}
	time.Sleep(20 * time.Millisecond) // widen the window in which an overlap would show
	return s.ImageServiceClient.PullImage(ctx, req, opts...)
}

func TestSerializedPulls(t *testing.T) {
	if got := concurrentPulls(t, Options{Serialize: true}); got != 1 {
		t.Errorf("max concurrent pulls = %d, want 1", got)
	}
}

func TestMaxParallelImagePulls(t *testing.T) {
	if got := concurrentPulls(t, Options{MaxParallel: 2}); got != 2 {
		t.Errorf("max concurrent pulls = %d, want 2", got)
	}
}

func TestPullQPSExceededFailsThePull(t *testing.T) {
	e := newEnv(t)
	mgr, _ := NewManager(Options{CRI: cri.New(nil, e.client, 0), PullQPS: 0.001, PullBurst: 1})
	pod, c := testPod("a.local/x:1", v1.PullAlways)
	if _, _, _, err := mgr.EnsureImage(context.Background(), pod, c, nil, Sandbox{}); err != nil {
		t.Fatalf("first pull within the burst: %v", err)
	}
	_, reason, msg, err := mgr.EnsureImage(context.Background(), pod, c, nil, Sandbox{})
	if !errors.Is(err, ErrImagePull) || reason != ReasonErrImagePull || !strings.Contains(msg, "pull QPS exceeded") {
		t.Fatalf("second pull over the limit: reason %q msg %q err %v", reason, msg, err)
	}
}

// concurrentPulls pulls five images at once through a manager with opts and returns the most
// pulls the runtime saw at the same time.
func concurrentPulls(t *testing.T, opts Options) int32 {
	e := newEnv(t)
	client := &slowPulls{ImageServiceClient: e.client}
	opts.CRI = cri.New(nil, client, 0)
	mgr, _ := NewManager(opts)
	var wg sync.WaitGroup
	for _, img := range []string{"a.local/x:1", "a.local/y:1", "a.local/z:1", "a.local/u:1", "a.local/v:1"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pod, c := testPod(img, v1.PullIfNotPresent)
			if _, _, _, err := mgr.EnsureImage(context.Background(), pod, c, nil, Sandbox{}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	return client.maxActive.Load()
}

func TestCredentialsFor(t *testing.T) {
	secret := v1.Secret{Data: map[string][]byte{
		v1.DockerConfigJsonKey: []byte(`{"auths":{"https://registry.example.com":{"auth":"dXNlcjpwYXNz"},` +
			`"other.example.com":{"username":"u2","password":"p2"}}}`),
	}}
	got := credentialsFor("registry.example.com/team/app:1", []v1.Secret{secret}, nil)
	if len(got) != 1 || got[0].Username != "user" || got[0].Password != "pass" {
		t.Fatalf("credentials = %+v", got)
	}
	if got := credentialsFor("busybox", []v1.Secret{secret}, nil); len(got) != 0 {
		t.Fatalf("docker hub image got %+v", got)
	}
}

func TestContainerRefFieldPath(t *testing.T) {
	pod := &v1.Pod{Spec: v1.PodSpec{
		InitContainers: []v1.Container{{Name: "setup"}},
		Containers:     []v1.Container{{Name: "app"}},
	}}
	if got := container.ContainerRef(pod, &pod.Spec.InitContainers[0]).FieldPath; got != "spec.initContainers{setup}" {
		t.Errorf("init field path %q", got)
	}
	if got := container.ContainerRef(pod, &pod.Spec.Containers[0]).FieldPath; got != "spec.containers{app}" {
		t.Errorf("app field path %q", got)
	}
}

// The Pulled event says how long the pull took and how big the image is, as upstream's.
func TestPulledEventCarriesTheImageSize(t *testing.T) {
	e := newEnv(t)
	pod, c := testPod("a.local/sized:1", v1.PullIfNotPresent)
	if _, _, _, err := e.mgr.EnsureImage(context.Background(), pod, c, nil, Sandbox{}); err != nil {
		t.Fatal(err)
	}
	for _, ev := range e.events() {
		if strings.Contains(ev, "Successfully pulled") {
			if !strings.HasSuffix(ev, "including waiting). Image size: 1048576 bytes.") {
				t.Errorf("event %q", ev)
			}
			return
		}
	}
	t.Error("no Pulled event")
}

// A removed pod's pull back-off and last pull error go with it; another pod's stay.
func TestForgetPodDropsItsPullBackOff(t *testing.T) {
	const img = "nodelet.local/missing:1"
	e := newEnv(t)
	e.fake.SetPullError(img, errors.New("registry unreachable"))
	gone, c := testPod(img, v1.PullIfNotPresent)
	kept, _ := testPod(img, v1.PullIfNotPresent)
	kept.UID = "uid-2"
	for _, pod := range []*v1.Pod{gone, kept} {
		if _, reason, _, _ := e.mgr.EnsureImage(context.Background(), pod, c, nil, Sandbox{}); reason != ReasonErrImagePull {
			t.Fatalf("pod %s: reason %q, want a failed pull", pod.UID, reason)
		}
	}
	e.mgr.ForgetPod(gone.UID)
	now := e.clock.Now()
	if e.mgr.backoff.IsInBackOffSinceUpdate("uid-1_"+img, now) || e.mgr.backoff.Get("uid-1_"+img) != 0 {
		t.Error("the removed pod's pull back-off is still held")
	}
	if _, ok := e.mgr.lastPullErr.Load("uid-1_" + img); ok {
		t.Error("the removed pod's last pull error is still held")
	}
	if !e.mgr.backoff.IsInBackOffSinceUpdate("uid-2_"+img, now) {
		t.Error("the other pod's pull back-off was dropped too")
	}
	if _, ok := e.mgr.lastPullErr.Load("uid-2_" + img); !ok {
		t.Error("the other pod's last pull error was dropped too")
	}
}
