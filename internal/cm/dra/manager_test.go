package dra

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1beta1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	drapb "k8s.io/kubelet/pkg/apis/dra/v1beta1"
	"k8s.io/utils/ptr"

	"github.com/nodelet/nodelet/internal/podspec/podhooks"
)

// env is a manager over a registered fake driver and a fake API holding the pod's claims.
type env struct {
	dir     string
	driver  *fakeDriver
	plugins *Plugins
	m       *Manager
	pod     *v1.Pod
}

// twoClaimPod: a pod with a claim named directly and one made from a template; container c0
// uses the first's "gpu" request, c1 all of the second, c2 none.
func twoClaimPod(name string) *v1.Pod {
	pod := claimPod(name, []v1.PodResourceClaim{
		{Name: "shared", ResourceClaimName: ptr.To("gpu-shared")},
		{Name: "own", ResourceClaimTemplateName: ptr.To("tmpl")},
	}, "shared/gpu", "own", "")
	pod.Status.ResourceClaimStatuses = []v1.PodResourceClaimStatus{{Name: "own", ResourceClaimName: ptr.To(name + "-own")}}
	return pod
}

func newEnv(t *testing.T) *env {
	t.Helper()
	e := &env{dir: tempDir(t), driver: &fakeDriver{}, pod: twoClaimPod("p")}
	client := newClient(allocatedClaim("gpu-shared", e.pod), ownedBy(allocatedClaim("p-own", e.pod), e.pod))
	e.plugins = readyPlugins(client)
	e.register(t)
	e.m = newManager(t, e.dir, e.plugins, client)
	return e
}

func (e *env) register(t *testing.T) {
	t.Helper()
	endpoint := serveDriver(t, e.dir, "driver", e.driver, false)
	if err := e.plugins.RegisterPlugin(context.Background(), driverName, endpoint, []string{drapb.DRAPluginService}); err != nil {
		t.Fatal(err)
	}
}

// cdi is what the container hooks give container i of pod.
func cdi(t *testing.T, hooks podhooks.Hooks, pod *v1.Pod, i int) []string {
	t.Helper()
	cfg := &runtimeapi.ContainerConfig{}
	if err := hooks.ApplyContainer(context.Background(), pod, &pod.Spec.Containers[i], cfg); err != nil {
		t.Fatalf("container %d: %v", i, err)
	}
	var ids []string
	for _, d := range cfg.CDIDevices {
		ids = append(ids, d.Name)
	}
	return ids
}

func TestPrepareBatchesThePodsClaimsAndHandsCDIDevicesToTheContainers(t *testing.T) {
	e := newEnv(t)
	hooks := podhooks.Hooks{Prepare: []podhooks.Prepare{e.m}, Container: []podhooks.Container{e.m}}
	if err := hooks.PreparePod(context.Background(), e.pod); err != nil {
		t.Fatal(err)
	}
	prepares, _ := e.driver.calls()
	if want := [][]string{{"gpu-shared", "p-own"}}; !slices.EqualFunc(prepares, want, slices.Equal) {
		t.Fatalf("NodePrepareResources calls = %q, want one with both claims %q", prepares, want)
	}
	if got := cdi(t, hooks, e.pod, 0); !slices.Equal(got, []string{"example.com/gpu=gpu-shared"}) {
		t.Errorf("c0 (request gpu of shared) CDI devices = %q", got)
	}
	if got := cdi(t, hooks, e.pod, 1); !slices.Equal(got, []string{"example.com/gpu=p-own", "example.com/nic=p-own"}) {
		t.Errorf("c1 (all of own) CDI devices = %q", got)
	}
	if got := cdi(t, hooks, e.pod, 2); len(got) != 0 {
		t.Errorf("c2 (no claims) CDI devices = %q", got)
	}
	// A second sync of the pod prepares nothing again.
	if err := hooks.PreparePod(context.Background(), e.pod); err != nil {
		t.Fatal(err)
	}
	if prepares, _ := e.driver.calls(); len(prepares) != 1 {
		t.Fatalf("prepared again: %q", prepares)
	}
	res := e.m.ContainerDynamicResources(e.pod, &e.pod.Spec.Containers[1])
	if len(res) != 1 || res[0].ClaimName != "p-own" || len(res[0].ClaimResources) != 2 ||
		res[0].ClaimResources[0].DriverName != driverName || res[0].ClaimResources[0].CDIDevices[0].Name != "example.com/gpu=p-own" {
		t.Errorf("pod-resources of c1 = %v", res)
	}
}

func TestAClaimNotReadyForThePodKeepsItWaiting(t *testing.T) {
	pod := claimPod("p", []v1.PodResourceClaim{{Name: "gpu", ResourceClaimName: ptr.To("gpu")}}, "gpu")
	tmplPod := claimPod("t", []v1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: ptr.To("tmpl")}}, "gpu")
	notAllocated := allocatedClaim("gpu", pod)
	notAllocated.Status.Allocation = nil
	for _, tc := range []struct {
		name  string
		pod   *v1.Pod
		claim *resourceapi.ResourceClaim
		want  string
	}{
		{"not reserved for the pod", pod, allocatedClaim("gpu"), "is not allowed to use resource claim gpu(uid-gpu)"},
		{"not allocated", pod, notAllocated, "claim default/gpu: not allocated"},
		{"not there", pod, nil, "failed to fetch ResourceClaim gpu referenced by pod p"},
		{"template's claim not created yet", tmplPod, nil, "ResourceClaim not created yet"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, driver := tempDir(t), &fakeDriver{}
			client := newClient()
			if tc.claim != nil {
				client = newClient(tc.claim)
			}
			e := &env{dir: dir, driver: driver, plugins: readyPlugins(client)}
			e.register(t)
			m := newManager(t, dir, e.plugins, client)
			hooks := podhooks.Hooks{Prepare: []podhooks.Prepare{m}}
			err := hooks.PreparePod(context.Background(), tc.pod)
			var pe *podhooks.PrepareError
			if !errors.As(err, &pe) || pe.Reason != "FailedPrepareDynamicResources" || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("PreparePod = %v, want a FailedPrepareDynamicResources error saying %q", err, tc.want)
			}
			if !strings.HasPrefix(err.Error(), "failed to prepare dynamic resources: ") {
				t.Errorf("error %q", err)
			}
			if prepares, _ := driver.calls(); len(prepares) != 0 {
				t.Fatalf("the driver was asked to prepare %q", prepares)
			}
		})
	}
}

func TestAClaimFromATemplateMustBeThePodsOwn(t *testing.T) {
	pod := twoClaimPod("p")
	other := twoClaimPod("q")
	client := newClient(allocatedClaim("gpu-shared", pod), ownedBy(allocatedClaim("p-own", pod), other))
	dir := tempDir(t)
	e := &env{dir: dir, driver: &fakeDriver{}, plugins: readyPlugins(client)}
	e.register(t)
	m := newManager(t, dir, e.plugins, client)
	if err := m.PreparePod(context.Background(), pod); err == nil || !strings.Contains(err.Error(), "pod is not owner") {
		t.Fatalf("PreparePod = %v", err)
	}
}

func TestARestartDoesNotPrepareAgain(t *testing.T) {
	e := newEnv(t)
	if err := e.m.PreparePod(context.Background(), e.pod); err != nil {
		t.Fatal(err)
	}
	// nodelet restarts: a new manager over the same checkpoint, the driver registers again.
	client := newClient(allocatedClaim("gpu-shared", e.pod), ownedBy(allocatedClaim("p-own", e.pod), e.pod))
	m := newManager(t, e.dir, e.plugins, client)
	hooks := podhooks.Hooks{Prepare: []podhooks.Prepare{m}, Container: []podhooks.Container{m}}
	if err := hooks.PreparePod(context.Background(), e.pod); err != nil {
		t.Fatal(err)
	}
	if prepares, _ := e.driver.calls(); len(prepares) != 1 {
		t.Fatalf("NodePrepareResources calls = %q, want the one before the restart only", prepares)
	}
	if got := cdi(t, hooks, e.pod, 1); !slices.Equal(got, []string{"example.com/gpu=p-own", "example.com/nic=p-own"}) {
		t.Errorf("after the restart, c1's CDI devices = %q", got)
	}
}

func TestASharedClaimIsUnpreparedAfterItsLastPod(t *testing.T) {
	e := newEnv(t)
	second := claimPod("q", []v1.PodResourceClaim{{Name: "shared", ResourceClaimName: ptr.To("gpu-shared")}}, "shared")
	client := newClient(allocatedClaim("gpu-shared", e.pod, second), ownedBy(allocatedClaim("p-own", e.pod), e.pod))
	m := newManager(t, e.dir, e.plugins, client)
	for _, p := range []*v1.Pod{e.pod, second} {
		if err := m.PreparePod(context.Background(), p); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.UnpreparePod(context.Background(), e.pod.UID); err != nil {
		t.Fatal(err)
	}
	if _, unprepares := e.driver.calls(); !slices.EqualFunc(unprepares, [][]string{{"p-own"}}, slices.Equal) {
		t.Fatalf("after the first pod: NodeUnprepareResources calls = %q, want only its own claim", unprepares)
	}
	if err := m.UnpreparePod(context.Background(), second.UID); err != nil {
		t.Fatal(err)
	}
	if _, unprepares := e.driver.calls(); !slices.EqualFunc(unprepares, [][]string{{"p-own"}, {"gpu-shared"}}, slices.Equal) {
		t.Fatalf("after both: NodeUnprepareResources calls = %q", unprepares)
	}
	if states, err := readCheckpoint(e.dir); err != nil || len(states) != 0 {
		t.Fatalf("checkpoint after both pods = %v, %v; want empty", states, err)
	}
}

func TestUnprepareIsRetriedUntilItWorksAlsoAfterARestart(t *testing.T) {
	e := newEnv(t)
	if err := e.m.PreparePod(context.Background(), e.pod); err != nil {
		t.Fatal(err)
	}
	e.driver.failUnprepares = 2
	if err := e.m.UnpreparePod(context.Background(), e.pod.UID); err == nil || !strings.Contains(err.Error(), "device busy") {
		t.Fatalf("UnpreparePod = %v, want the driver's error", err)
	}
	if !e.m.HasPod(e.pod.UID) {
		t.Fatal("a failed unprepare forgot the pod's claims")
	}
	// nodelet restarts; its reconcile loop finds the pod gone once the sources are ready.
	sourcesReady := false
	m, err := New(Options{StateDir: e.dir, Plugins: e.plugins, SourcesReady: func() bool { return sourcesReady },
		InUse: func() []types.UID { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	m.reconcile(context.Background())
	if _, unprepares := e.driver.calls(); len(unprepares) != 1 {
		t.Fatalf("unprepared before the pod sources were ready: %q", unprepares)
	}
	sourcesReady = true
	m.reconcile(context.Background()) // fails once more
	m.reconcile(context.Background())
	if _, unprepares := e.driver.calls(); len(unprepares) != 3 {
		t.Fatalf("NodeUnprepareResources calls = %q, want 3", unprepares)
	}
	if m.HasPod(e.pod.UID) {
		t.Fatal("the claims stay after a successful unprepare")
	}
	if states, err := readCheckpoint(e.dir); err != nil || len(states) != 0 {
		t.Fatalf("checkpoint = %v, %v; want empty", states, err)
	}
}

func TestACorruptCheckpointStopsTheStart(t *testing.T) {
	dir := tempDir(t)
	if err := os.WriteFile(filepath.Join(dir, stateFileName), []byte(`{"Data":"{}","Checksum":1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := New(Options{StateDir: dir, Plugins: readyPlugins(nil)}); err == nil || !strings.Contains(err.Error(), "corrupted") {
		t.Fatalf("New = %v, want a corrupt checkpoint error", err)
	}
}
