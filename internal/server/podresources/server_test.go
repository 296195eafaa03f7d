package podresources

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"sort"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/flowcontrol"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"
	"k8s.io/kubelet/pkg/apis/podresources/v1alpha1"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/cpuset"
)

// fakePods is a pod manager holding a fixed list.
type fakePods []*v1.Pod

func (f fakePods) Pods() []*v1.Pod { return f }

func (f fakePods) GetByName(namespace, name string) (*v1.Pod, bool) {
	for _, p := range f {
		if p.Namespace == namespace && p.Name == name {
			return p, true
		}
	}
	return nil, false
}

// key names one container of one pod in the fakes' tables.
type key struct {
	uid       types.UID
	container string
}

type fakeCPUs struct {
	held        map[key]cpuset.CPUSet
	allocatable cpuset.CPUSet
}

func (f *fakeCPUs) ContainerCPUs(uid types.UID, c string) cpuset.CPUSet { return f.held[key{uid, c}] }
func (f *fakeCPUs) AllocatableCPUs() cpuset.CPUSet                      { return f.allocatable }

type fakeMemory struct {
	held        map[key][]*podresourcesv1.ContainerMemory
	allocatable []*podresourcesv1.ContainerMemory
}

func (f *fakeMemory) ContainerMemory(uid types.UID, c string) []*podresourcesv1.ContainerMemory {
	return f.held[key{uid, c}]
}
func (f *fakeMemory) AllocatableMemory() []*podresourcesv1.ContainerMemory { return f.allocatable }

type fakeDevices struct {
	held        map[key][]*podresourcesv1.ContainerDevices
	allocatable []*podresourcesv1.ContainerDevices
}

func (f *fakeDevices) ContainerDevices(uid types.UID, c string) []*podresourcesv1.ContainerDevices {
	return f.held[key{uid, c}]
}
func (f *fakeDevices) AllocatableDevices() []*podresourcesv1.ContainerDevices { return f.allocatable }

func testPod(namespace, name string, uid types.UID, initContainers []v1.Container, containers ...string) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, UID: uid}}
	p.Spec.InitContainers = initContainers
	for _, c := range containers {
		p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: c})
	}
	return p
}

func sidecarContainer(name string) v1.Container {
	always := v1.ContainerRestartPolicyAlways
	return v1.Container{Name: name, RestartPolicy: &always}
}

func numa(ids ...int64) *podresourcesv1.TopologyInfo {
	t := &podresourcesv1.TopologyInfo{}
	for _, id := range ids {
		t.Nodes = append(t.Nodes, &podresourcesv1.NUMANode{ID: id})
	}
	return t
}

func gpu(ids ...string) []*podresourcesv1.ContainerDevices {
	return []*podresourcesv1.ContainerDevices{{ResourceName: "example.com/gpu", DeviceIds: ids, Topology: numa(0)}}
}

func memoryBlock(size uint64, nodes ...int64) []*podresourcesv1.ContainerMemory {
	return []*podresourcesv1.ContainerMemory{{MemoryType: "memory", Size_: size, Topology: numa(nodes...)}}
}

// startServer serves opts on a socket in a fresh directory and returns a client of it.
func startServer(t *testing.T, opts Options) podresourcesv1.PodResourcesListerClient {
	t.Helper()
	if opts.Socket == "" {
		opts.Socket = filepath.Join(t.TempDir(), DirName, SocketName)
	}
	s, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Listen(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	conn, err := grpc.NewClient("unix://"+opts.Socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = conn.Close()
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return podresourcesv1.NewPodResourcesListerClient(conn)
}

func callCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestListReportsLongRunningContainersWithTheirResources(t *testing.T) {
	web := testPod("default", "web", "uid-web",
		[]v1.Container{{Name: "setup"}, sidecarContainer("proxy")}, "app", "logger")
	idle := testPod("kube-system", "idle", "uid-idle", nil, "main")
	opts := Options{
		Pods: fakePods{idle, web},
		CPUs: &fakeCPUs{held: map[key]cpuset.CPUSet{
			{"uid-web", "app"}:   cpuset.New(3, 1, 2),
			{"uid-web", "setup"}: cpuset.New(5), // not long-running: not reported
		}},
		Memory:  &fakeMemory{held: map[key][]*podresourcesv1.ContainerMemory{{"uid-web", "app"}: memoryBlock(1<<30, 0)}},
		Devices: &fakeDevices{held: map[key][]*podresourcesv1.ContainerDevices{{"uid-web", "proxy"}: gpu("dev-1")}},
	}
	client := startServer(t, opts)
	before := counterValue(requestsList)

	resp, err := client.List(callCtx(t), &podresourcesv1.ListPodResourcesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	want := []*podresourcesv1.PodResources{
		{Name: "idle", Namespace: "kube-system", Containers: []*podresourcesv1.ContainerResources{{Name: "main"}}},
		{Name: "web", Namespace: "default", Containers: []*podresourcesv1.ContainerResources{
			{Name: "proxy", Devices: gpu("dev-1")},
			{Name: "app", CpuIds: []int64{1, 2, 3}, Memory: memoryBlock(1<<30, 0)},
			{Name: "logger"},
		}},
	}
	assertPods(t, resp.PodResources, want)
	if got := counterValue(requestsList) - before; got != 1 {
		t.Errorf("List requests counted %v times, want 1", got)
	}
}

func TestV1alpha1ListsAppContainersAndTheirDevices(t *testing.T) {
	sock := filepath.Join(t.TempDir(), DirName, SocketName)
	web := testPod("default", "web", "uid-web", []v1.Container{sidecarContainer("proxy")}, "app")
	startServer(t, Options{Socket: sock, Pods: fakePods{web},
		CPUs: &fakeCPUs{held: map[key]cpuset.CPUSet{{"uid-web", "app"}: cpuset.New(1)}},
		Devices: &fakeDevices{held: map[key][]*podresourcesv1.ContainerDevices{
			{"uid-web", "app"}: gpu("dev-1"), {"uid-web", "proxy"}: gpu("dev-2"),
		}},
	})
	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	before := counterValueOf(requestsTotal, "v1alpha1")
	resp, err := v1alpha1.NewPodResourcesListerClient(conn).List(callCtx(t), &v1alpha1.ListPodResourcesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	want := &v1alpha1.ListPodResourcesResponse{PodResources: []*v1alpha1.PodResources{{Name: "web", Namespace: "default",
		Containers: []*v1alpha1.ContainerResources{{Name: "app",
			Devices: []*v1alpha1.ContainerDevices{{ResourceName: "example.com/gpu", DeviceIds: []string{"dev-1"}}}}}}}}
	if !sameMessage(t, resp, want) {
		t.Errorf("v1alpha1 List = %v, want %v", resp, want)
	}
	if got := counterValueOf(requestsTotal, "v1alpha1") - before; got != 1 {
		t.Errorf("v1alpha1 requests counted %v times, want 1", got)
	}
}

func TestListWithoutManagersReportsOnlyNames(t *testing.T) {
	client := startServer(t, Options{Pods: fakePods{testPod("default", "web", "uid-web", nil, "app")}})
	resp, err := client.List(callCtx(t), &podresourcesv1.ListPodResourcesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	assertPods(t, resp.PodResources, []*podresourcesv1.PodResources{
		{Name: "web", Namespace: "default", Containers: []*podresourcesv1.ContainerResources{{Name: "app"}}},
	})
}

func TestGetAllocatableResourcesReportsEveryManager(t *testing.T) {
	client := startServer(t, Options{
		Pods:    fakePods{},
		CPUs:    &fakeCPUs{allocatable: cpuset.New(1, 3, 2)},
		Memory:  &fakeMemory{allocatable: memoryBlock(8<<30, 0)},
		Devices: &fakeDevices{allocatable: gpu("dev-0", "dev-1")},
	})
	resp, err := client.GetAllocatableResources(callCtx(t), &podresourcesv1.AllocatableResourcesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	want := &podresourcesv1.AllocatableResourcesResponse{CpuIds: []int64{1, 2, 3}, Memory: memoryBlock(8<<30, 0), Devices: gpu("dev-0", "dev-1")}
	if !sameMessage(t, resp, want) {
		t.Errorf("GetAllocatableResources = %v, want %v", resp, want)
	}

	empty := startServer(t, Options{Pods: fakePods{}})
	resp, err = empty.GetAllocatableResources(callCtx(t), &podresourcesv1.AllocatableResourcesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.CpuIds)+len(resp.Memory)+len(resp.Devices) != 0 {
		t.Errorf("without managers GetAllocatableResources = %v, want nothing", resp)
	}
}

func TestGetRefusesWithoutTheFeatureGate(t *testing.T) {
	client := startServer(t, Options{Pods: fakePods{testPod("default", "web", "uid-web", nil, "app")}})
	before := counterValue(errorsGet)
	_, err := client.Get(callCtx(t), &podresourcesv1.GetPodResourcesRequest{PodName: "web", PodNamespace: "default"})
	assertStatus(t, err, codes.Unknown, "PodResources API Get method disabled")
	if got := counterValue(errorsGet) - before; got != 1 {
		t.Errorf("Get errors counted %v times, want 1", got)
	}
}

func TestGetReportsOnePodByName(t *testing.T) {
	web := testPod("default", "web", "uid-web", []v1.Container{sidecarContainer("proxy")}, "app")
	other := testPod("other", "web", "uid-other", nil, "app")
	client := startServer(t, Options{
		Pods: fakePods{other, web}, GetEnabled: true,
		CPUs: &fakeCPUs{held: map[key]cpuset.CPUSet{{"uid-web", "app"}: cpuset.New(1), {"uid-other", "app"}: cpuset.New(2)}},
	})
	resp, err := client.Get(callCtx(t), &podresourcesv1.GetPodResourcesRequest{PodName: "web", PodNamespace: "default"})
	if err != nil {
		t.Fatal(err)
	}
	assertPods(t, []*podresourcesv1.PodResources{resp.PodResources}, []*podresourcesv1.PodResources{
		{Name: "web", Namespace: "default", Containers: []*podresourcesv1.ContainerResources{{Name: "proxy"}, {Name: "app", CpuIds: []int64{1}}}},
	})

	_, err = client.Get(callCtx(t), &podresourcesv1.GetPodResourcesRequest{PodName: "gone", PodNamespace: "default"})
	assertStatus(t, err, codes.Unknown, "pod gone in namespace default not found")
}

func TestRequestsOverTheRateLimitAreRejected(t *testing.T) {
	clock := testingclock.NewFakeClock(time.Now())
	client := startServer(t, Options{
		Pods:    fakePods{},
		Limiter: flowcontrol.NewTokenBucketPassiveRateLimiterWithClock(DefaultQPS, DefaultBurst, clock),
	})
	ctx := callCtx(t)
	for i := range DefaultBurst {
		if _, err := client.List(ctx, &podresourcesv1.ListPodResourcesRequest{}); err != nil {
			t.Fatalf("request %d of the burst: %v", i+1, err)
		}
	}
	// Every method shares the one limit.
	_, err := client.GetAllocatableResources(ctx, &podresourcesv1.AllocatableResourcesRequest{})
	assertStatus(t, err, codes.ResourceExhausted, "rejected by rate limit")

	clock.Step(time.Second * 3 / 2 / DefaultQPS) // one and a half tokens back
	if _, err := client.List(ctx, &podresourcesv1.ListPodResourcesRequest{}); err != nil {
		t.Fatalf("after a token came back: %v", err)
	}
	_, err = client.List(ctx, &podresourcesv1.ListPodResourcesRequest{})
	assertStatus(t, err, codes.ResourceExhausted, "rejected by rate limit")
}

func TestListenReplacesAStaleSocketAndRunRemovesIt(t *testing.T) {
	sock := filepath.Join(t.TempDir(), DirName, SocketName)
	if err := os.MkdirAll(filepath.Dir(sock), 0o750); err != nil {
		t.Fatal(err)
	}
	// A socket left by a nodelet that was killed: nobody listens on it any more.
	stale, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	stale.(*net.UnixListener).SetUnlinkOnClose(false)
	_ = stale.Close()

	s, err := New(Options{Socket: sock, Pods: fakePods{testPod("default", "web", "uid-web", nil, "app")}})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Listen(); err != nil {
		t.Fatalf("Listen over a stale socket: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	resp, err := podresourcesv1.NewPodResourcesListerClient(conn).List(callCtx(t), &podresourcesv1.ListPodResourcesRequest{})
	if err != nil || len(resp.PodResources) != 1 {
		t.Fatalf("List on the new socket = %v, %v; want the one pod", resp, err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	if _, err := os.Stat(sock); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("socket still there after Run returned: %v", err)
	}
}

func TestRunWithoutListenFails(t *testing.T) {
	s, err := New(Options{Socket: filepath.Join(t.TempDir(), SocketName), Pods: fakePods{}})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Run(context.Background()); err == nil {
		t.Fatal("Run before Listen succeeded")
	}
	if _, err := New(Options{Pods: fakePods{}}); err == nil {
		t.Error("New without a socket succeeded")
	}
}

// counterValue reads the v1 series of one of the service's counters.
func counterValue(c *prometheus.CounterVec) float64 { return counterValueOf(c, apiVersion) }

func counterValueOf(c *prometheus.CounterVec, version string) float64 {
	var m dto.Metric
	if err := c.WithLabelValues(version).Write(&m); err != nil {
		panic(err)
	}
	return m.GetCounter().GetValue()
}

// message is what the API's (gogo) messages offer: their wire form is their content.
type message interface{ Marshal() ([]byte, error) }

// sameMessage compares two messages by wire form, so nil and empty lists are alike, as on the wire.
func sameMessage(t *testing.T, a, b message) bool {
	t.Helper()
	x, err := a.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	y, err := b.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Equal(x, y)
}

func assertStatus(t *testing.T, err error, code codes.Code, msg string) {
	t.Helper()
	st, ok := status.FromError(err)
	if !ok || st.Code() != code || st.Message() != msg {
		t.Errorf("error = %v, want code %v with %q", err, code, msg)
	}
}

// assertPods compares pod lists in namespace/name order: List's order is not part of the API.
func assertPods(t *testing.T, got, want []*podresourcesv1.PodResources) {
	t.Helper()
	byName := func(pods []*podresourcesv1.PodResources) {
		sort.Slice(pods, func(i, j int) bool {
			return pods[i].Namespace+"/"+pods[i].Name < pods[j].Namespace+"/"+pods[j].Name
		})
	}
	byName(got)
	byName(want)
	if len(got) != len(want) {
		t.Fatalf("got %d pods %v, want %d %v", len(got), got, len(want), want)
	}
	for i := range want {
		if !sameMessage(t, got[i], want[i]) {
			t.Errorf("pod %d:\n got %v\nwant %v", i, got[i], want[i])
		}
	}
}

// Right after a restart the pod manager is still being filled: List waits for it rather than
// report no pods, while GetAllocatableResources answers at once.
func TestListWaitsUntilThePodsAreKnown(t *testing.T) {
	var synced atomic.Bool
	client := startServer(t, Options{PodsSynced: synced.Load,
		Pods: fakePods{testPod("default", "web", "uid-web", nil, "app")}})
	if _, err := client.GetAllocatableResources(callCtx(t), &podresourcesv1.AllocatableResourcesRequest{}); err != nil {
		t.Fatalf("GetAllocatableResources before the pods are known: %v", err)
	}
	short, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if resp, err := client.List(short, &podresourcesv1.ListPodResourcesRequest{}); status.Code(err) != codes.Unavailable && status.Code(err) != codes.DeadlineExceeded {
		t.Fatalf("List before the pods are known: %v, %v; want it to wait", resp, err)
	}
	time.AfterFunc(200*time.Millisecond, func() { synced.Store(true) })
	resp, err := client.List(callCtx(t), &podresourcesv1.ListPodResourcesRequest{})
	if err != nil || len(resp.PodResources) != 1 || resp.PodResources[0].Name != "web" {
		t.Fatalf("List once the pods are known: %v, %v", resp, err)
	}
}

// The wait is bounded: pods that never become known (an API server down at start) get an
// answer with the pods known so far once podsSyncWait has passed, not an endless wait.
func TestListAnswersWithWhatItKnowsAfterTheWait(t *testing.T) {
	defer func(was time.Duration) { podsSyncWait = was }(podsSyncWait)
	podsSyncWait = 200 * time.Millisecond
	client := startServer(t, Options{PodsSynced: func() bool { return false },
		Pods: fakePods{testPod("default", "web", "uid-web", nil, "app")}})
	start := time.Now()
	resp, err := client.List(callCtx(t), &podresourcesv1.ListPodResourcesRequest{})
	if err != nil || len(resp.PodResources) != 1 {
		t.Fatalf("List after the bounded wait: %v, %v; want the known pod", resp, err)
	}
	if waited := time.Since(start); waited < podsSyncWait {
		t.Errorf("List answered after %s, before the pods could be known (wait %s)", waited, podsSyncWait)
	}
}

// fakeClaims gives each container named "app" one prepared claim.
type fakeClaims struct{}

func (fakeClaims) ContainerDynamicResources(pod *v1.Pod, c *v1.Container) []*podresourcesv1.DynamicResource {
	if c.Name != "app" {
		return nil
	}
	return []*podresourcesv1.DynamicResource{{ClaimName: pod.Name + "-gpu", ClaimNamespace: pod.Namespace,
		ClaimResources: []*podresourcesv1.ClaimResource{{DriverName: "gpu.example.com", PoolName: "node-1", DeviceName: "gpu-0",
			CDIDevices: []*podresourcesv1.CDIDevice{{Name: "example.com/gpu=gpu-0"}}}}}}
}

// With the DRA manager's reading side given (KubeletPodResourcesDynamicResources), List
// reports each container's prepared claims.
func TestListReportsTheContainersClaims(t *testing.T) {
	web := testPod("default", "web", "uid-web", nil, "app", "logger")
	client := startServer(t, Options{Pods: fakePods{web}, DynamicResources: fakeClaims{}})
	resp, err := client.List(callCtx(t), &podresourcesv1.ListPodResourcesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	want := []*podresourcesv1.PodResources{{Name: "web", Namespace: "default", Containers: []*podresourcesv1.ContainerResources{
		{Name: "app", DynamicResources: fakeClaims{}.ContainerDynamicResources(web, &web.Spec.Containers[0])},
		{Name: "logger"},
	}}}
	assertPods(t, resp.PodResources, want)
}
