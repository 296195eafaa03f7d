package kuberuntime

import (
	"errors"
	"strings"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodelet/nodelet/internal/podspec/kubehash"
	"github.com/nodelet/nodelet/internal/runtime/container"
)

// fakeActuated is an in-memory ActuatedResources.
type fakeActuated struct {
	mu sync.Mutex
	m  map[string]v1.ResourceRequirements
}

func (f *fakeActuated) Actuated(uid types.UID, name string) (v1.ResourceRequirements, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, ok := f.m[string(uid)+"/"+name]
	return r, ok
}

func (f *fakeActuated) SetActuated(uid types.UID, name string, r v1.ResourceRequirements) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.m[string(uid)+"/"+name] = *r.DeepCopy()
	return nil
}

// fakePodCgroups holds one pod cgroup's settings and notes, for each write, how many
// UpdateContainerResources calls the runtime had seen before it.
type fakePodCgroups struct {
	env     *testEnv
	current PodCgroupConfig
	usage   int64
	writes  []string
}

func (f *fakePodCgroups) PodConfig(pod *v1.Pod) (PodCgroupConfig, PodCgroupConfig, error) {
	var want PodCgroupConfig
	want.CPUShares, want.CPUQuota, want.Memory = 2, -1, -1
	var cpuReq, cpuLim, mem int64
	limited := true
	for _, c := range pod.Spec.Containers {
		cpuReq += c.Resources.Requests.Cpu().MilliValue()
		cpuLim += c.Resources.Limits.Cpu().MilliValue()
		mem += c.Resources.Limits.Memory().Value()
		limited = limited && !c.Resources.Limits.Memory().IsZero()
	}
	want.CPUShares, want.CPUQuota = cpuReq*1024/1000, cpuLim*100
	if limited {
		want.Memory = mem
	}
	return f.current, want, nil
}

func (f *fakePodCgroups) SetPodConfig(_ *v1.Pod, c PodCgroupConfig) error {
	before := f.env.fake.CountCalls("UpdateContainerResources")
	switch {
	case c.CPUQuota != 0:
		f.current.CPUQuota = c.CPUQuota
		f.writes = append(f.writes, "quota after "+itoa(before))
	case c.CPUShares != 0:
		f.current.CPUShares = c.CPUShares
		f.writes = append(f.writes, "shares after "+itoa(before))
	case c.Memory != 0:
		f.current.Memory = c.Memory
		f.writes = append(f.writes, "memory after "+itoa(before))
	}
	return nil
}

func (f *fakePodCgroups) PodMemoryUsage(*v1.Pod) (int64, error) { return f.usage, nil }

func itoa(n int) string { return string(rune('0' + n)) }

func newResizeEnv(t *testing.T) (*testEnv, *fakeActuated, *fakePodCgroups) {
	actuated := &fakeActuated{m: map[string]v1.ResourceRequirements{}}
	cg := &fakePodCgroups{}
	e := newTestEnv(t, func(o *Options) { o.Actuated, o.PodCgroups = actuated, cg })
	cg.env = e
	return e, actuated, cg
}

func limits(cpu, mem string) v1.ResourceRequirements {
	r := v1.ResourceRequirements{Limits: v1.ResourceList{}, Requests: v1.ResourceList{}}
	for name, q := range map[v1.ResourceName]string{v1.ResourceCPU: cpu, v1.ResourceMemory: mem} {
		if q != "" {
			r.Limits[name], r.Requests[name] = resource.MustParse(q), resource.MustParse(q)
		}
	}
	return r
}

func sized(c v1.Container, r v1.ResourceRequirements, policies ...v1.ContainerResizePolicy) v1.Container {
	c.Resources, c.ResizePolicy = r, policies
	return c
}

func TestResizeCPUInPlaceGrowsPodCgroupFirst(t *testing.T) {
	e, actuated, cg := newResizeEnv(t)
	pod := newPod("web", sized(ctr("a", "sleep"), limits("500m", "64Mi")), sized(ctr("b", "sleep"), limits("500m", "64Mi")))
	if res := e.sync(pod); res.Err != nil || res.Resized {
		t.Fatalf("start: %v resized=%v", res.Err, res.Resized)
	}
	if r, ok := actuated.Actuated(pod.UID, "a"); !ok || r.Limits.Cpu().String() != "500m" {
		t.Fatalf("creation not recorded as actuated: %v %v", r, ok)
	}
	cg.current = PodCgroupConfig{CPUShares: 1024, CPUQuota: 100000, Memory: 128 << 20}
	idA, idB := e.running("a").ID, e.running("b").ID

	// a grows to 1 cpu, b shrinks to 250m: the pod grows (1250m > 1000m).
	resized := newPod("web", sized(ctr("a", "sleep"), limits("1", "64Mi")), sized(ctr("b", "sleep"), limits("250m", "64Mi")))
	res := e.sync(resized)
	if res.Err != nil || !res.Resized || res.ResizeErr != nil {
		t.Fatalf("resize: err %v resized %v resizeErr %v", res.Err, res.Resized, res.ResizeErr)
	}
	if e.running("a").ID != idA || e.running("b").ID != idB || e.fake.CountCalls("StopContainer") != 0 {
		t.Fatal("an in-place resize restarted a container")
	}
	if q := e.running("a").Config.Linux.Resources.CpuQuota; q != 100000 {
		t.Errorf("a's cpu quota %d, want 100000", q)
	}
	if q := e.running("b").Config.Linux.Resources.CpuQuota; q != 25000 {
		t.Errorf("b's cpu quota %d, want 25000", q)
	}
	if got, want := strings.Join(cg.writes, ", "), "quota after 0, shares after 0"; got != want {
		t.Errorf("pod cgroup writes %q, want %q (a growing pod before its containers)", got, want)
	}
	if r, _ := actuated.Actuated(pod.UID, "a"); r.Limits.Cpu().String() != "1" || r.Limits.Memory().String() != "64Mi" {
		t.Errorf("a's actuated resources %v", r)
	}
	// Done: the next sync changes nothing.
	if res := e.sync(resized); res.Resized {
		t.Error("a finished resize was applied again")
	}
}

func TestResizeShrinkUpdatesContainersBeforePodAndDecreasesFirst(t *testing.T) {
	e, _, cg := newResizeEnv(t)
	pod := newPod("web", sized(ctr("a", "sleep"), limits("500m", "")), sized(ctr("b", "sleep"), limits("500m", "")))
	e.sync(pod)
	cg.current = PodCgroupConfig{CPUShares: 1024, CPUQuota: 100000, Memory: -1}
	var order []string
	resized := newPod("web", sized(ctr("a", "sleep"), limits("600m", "")), sized(ctr("b", "sleep"), limits("200m", "")))
	if res := e.sync(resized); res.ResizeErr != nil {
		t.Fatal(res.ResizeErr)
	}
	for _, call := range e.fake.Calls() {
		if call == "UpdateContainerResources" {
			order = append(order, call)
		}
	}
	if len(order) != 2 {
		t.Fatalf("want 2 container updates, got %d", len(order))
	}
	if got, want := strings.Join(cg.writes, ", "), "shares after 2, quota after 2"; got != want {
		t.Errorf("pod cgroup writes %q, want %q (a shrinking pod after its containers, requests before limits)", got, want)
	}
	if q := e.running("b").Config.Linux.Resources.CpuQuota; q != 20000 {
		t.Errorf("b's quota %d, want 20000", q)
	}
}

func TestResizeMemoryWithRestartContainerPolicy(t *testing.T) {
	e, _, cg := newResizeEnv(t)
	restart := v1.ContainerResizePolicy{ResourceName: v1.ResourceMemory, RestartPolicy: v1.RestartContainer}
	pod := newPod("db", sized(ctr("db", "sleep"), limits("500m", "64Mi"), restart))
	pod.Spec.RestartPolicy = v1.RestartPolicyNever // a resize restarts it all the same
	e.sync(pod)
	old := e.running("db")
	cg.current = PodCgroupConfig{CPUShares: 512, CPUQuota: 50000, Memory: 64 << 20}

	resized := newPod("db", sized(ctr("db", "sleep"), limits("500m", "128Mi"), restart))
	resized.Spec.RestartPolicy = v1.RestartPolicyNever
	res := e.sync(resized)
	if res.Err != nil || !res.Resized {
		t.Fatalf("resize: %v resized=%v", res.Err, res.Resized)
	}
	now := e.running("db")
	if now.ID == old.ID || now.Config.Metadata.Attempt != 1 {
		t.Fatalf("want a new instance with attempt 1, got %s attempt %d", now.ID, now.Config.Metadata.Attempt)
	}
	if m := now.Config.Linux.Resources.MemoryLimitInBytes; m != 128<<20 {
		t.Errorf("new instance's memory limit %d", m)
	}
	if e.fake.CountCalls("UpdateContainerResources") != 0 {
		t.Error("RestartContainer must not update in place")
	}
	if cg.current.Memory != 128<<20 {
		t.Errorf("pod cgroup memory %d, want it grown with the restart", cg.current.Memory)
	}
	if !hasEvent(e.events(), "Normal Killing Container db resize requires restart") {
		t.Error("no Killing event with upstream's resize message")
	}
}

func TestResizeMemoryNotBelowPodUsage(t *testing.T) {
	e, actuated, cg := newResizeEnv(t)
	pod := newPod("m", sized(ctr("m", "sleep"), limits("", "128Mi")))
	e.sync(pod)
	cg.current, cg.usage = PodCgroupConfig{CPUShares: 2, CPUQuota: -1, Memory: 128 << 20}, 100<<20
	resized := newPod("m", sized(ctr("m", "sleep"), limits("", "64Mi")))
	res := e.sync(resized)
	want := "aborting attempt to set pod memory limit less than current memory usage for pod m"
	if res.ResizeErr == nil || res.ResizeErr.Error() != want {
		t.Fatalf("resize error %v, want %q", res.ResizeErr, want)
	}
	if e.fake.CountCalls("UpdateContainerResources") != 0 || cg.current.Memory != 128<<20 {
		t.Error("memory was lowered below the pod's usage")
	}
	if r, _ := actuated.Actuated(pod.UID, "m"); r.Limits.Memory().String() != "128Mi" {
		t.Errorf("actuated %v, want still 128Mi: the resize stays in progress", r)
	}
	cg.usage = 10 << 20 // it freed memory: the retry goes through
	if res := e.sync(resized); res.ResizeErr != nil || e.running("m").Config.Linux.Resources.MemoryLimitInBytes != 64<<20 {
		t.Fatalf("retry: %v", res.ResizeErr)
	}
}

func TestResizeUpdateFailureIsReportedAndRetried(t *testing.T) {
	e, actuated, _ := newResizeEnv(t)
	pod := newPod("f", sized(ctr("f", "sleep"), limits("500m", "")))
	e.sync(pod)
	e.fake.FailNext("UpdateContainerResources", errors.New("boom"))
	resized := newPod("f", sized(ctr("f", "sleep"), limits("700m", "")))
	if res := e.sync(resized); res.ResizeErr == nil || !strings.Contains(res.ResizeErr.Error(), "boom") {
		t.Fatalf("want the runtime's error, got %v", res.ResizeErr)
	}
	if r, _ := actuated.Actuated(pod.UID, "f"); r.Limits.Cpu().String() != "500m" {
		t.Errorf("a failed update was recorded as actuated: %v", r)
	}
	if res := e.sync(resized); res.ResizeErr != nil || e.running("f").Config.Linux.Resources.CpuQuota != 70000 {
		t.Fatalf("retry: %v", res.ResizeErr)
	}
}

func TestContainerHashLeavesResourcesOut(t *testing.T) {
	a := sized(ctr("a", "sleep"), limits("500m", ""))
	b := sized(ctr("a", "sleep"), limits("2", "1Gi"))
	upstream := &container.ContainerStatus{Hash: kubehash.ContainerHash(&a)}
	if !hashMatches(upstream, &b) {
		t.Error("resources changed the hash")
	}
	c := a
	c.Image = "other"
	if hashMatches(upstream, &c) {
		t.Error("the image did not change the hash")
	}
	// Containers an older nodelet made carry its hashes: without resources, or of the whole spec.
	if !hashMatches(&container.ContainerStatus{Hash: legacyHash(&a), LegacyHash: true}, &b) {
		t.Error("a container made with the old hash without resources is not recognised")
	}
	if !hashMatches(&container.ContainerStatus{Hash: hashJSON(&a), LegacyHash: true}, &a) {
		t.Error("a container made with the whole-spec hash is not recognised")
	}
	if hashMatches(&container.ContainerStatus{Hash: legacyHash(&a), LegacyHash: true}, &c) {
		t.Error("an old hash matched a changed image")
	}
}

func TestResourcesFromCRI(t *testing.T) {
	got := resizeFromCRI(&runtimeapi.ContainerResources{Linux: &runtimeapi.LinuxContainerResources{
		CpuPeriod: 100000, CpuQuota: 50000, CpuShares: 512, MemoryLimitInBytes: 64 << 20,
	}})
	if got.CPULimit.String() != "500m" || got.CPURequest.String() != "500m" || got.MemoryLimit.String() != "64Mi" {
		t.Errorf("got %v %v %v", got.CPULimit, got.CPURequest, got.MemoryLimit)
	}
	if resizeFromCRI(nil) != nil {
		t.Error("nothing reported must give nil")
	}
}
