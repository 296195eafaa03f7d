package node

import (
	"context"
	"errors"
	"reflect"
	"runtime"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/nodelet/nodelet/internal/lib/kubeclient/kubeclienttest"
	"github.com/nodelet/nodelet/internal/lib/version"
	"github.com/nodelet/nodelet/internal/testutil"
)

func quantities(t *testing.T, list v1.ResourceList) map[v1.ResourceName]string {
	t.Helper()
	out := map[v1.ResourceName]string{}
	for name, q := range list {
		out[name] = q.String()
	}
	return out
}

func TestRegisterCreatesTheNode(t *testing.T) {
	e := newEnv(t, testOptions())
	if err := e.ctrl.register(context.Background()); err != nil {
		t.Fatal(err)
	}
	n := e.node(t)

	wantLabels := map[string]string{
		"kubernetes.io/hostname": testNode,
		"kubernetes.io/os":       runtime.GOOS, "kubernetes.io/arch": runtime.GOARCH,
		"beta.kubernetes.io/os": runtime.GOOS, "beta.kubernetes.io/arch": runtime.GOARCH,
		"tier": "edge",
	}
	if !reflect.DeepEqual(n.Labels, wantLabels) {
		t.Errorf("labels = %v, want %v", n.Labels, wantLabels)
	}
	if len(n.Spec.Taints) != 1 || n.Spec.Taints[0].Key != "dedicated" || n.Spec.Unschedulable {
		t.Errorf("spec = %+v, want the one registration taint and schedulable", n.Spec)
	}

	wantCapacity := map[v1.ResourceName]string{
		"cpu": "4", "memory": "8Gi", "pods": "110", "ephemeral-storage": "100Gi",
		"hugepages-2Mi": "0", "hugepages-1Gi": "1Gi",
	}
	if got := quantities(t, n.Status.Capacity); !reflect.DeepEqual(got, wantCapacity) {
		t.Errorf("capacity = %v, want %v", got, wantCapacity)
	}
	// cpu: 4 - 500m - 250m. memory: 8Gi - 1Gi - 512Mi - 100Mi eviction - 1Gi huge pages = 5532Mi.
	// ephemeral-storage: 100Gi - 1Gi reserved - 10% (10Gi) eviction.
	wantAllocatable := map[v1.ResourceName]string{
		"cpu": "3250m", "memory": "5532Mi", "pods": "110", "ephemeral-storage": "89Gi",
		"hugepages-2Mi": "0", "hugepages-1Gi": "1Gi",
	}
	if got := quantities(t, n.Status.Allocatable); !reflect.DeepEqual(got, wantAllocatable) {
		t.Errorf("allocatable = %v, want %v", got, wantAllocatable)
	}

	wantAddrs := []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "192.0.2.10"}, {Type: v1.NodeHostName, Address: testNode}}
	if !reflect.DeepEqual(n.Status.Addresses, wantAddrs) {
		t.Errorf("addresses = %v, want %v", n.Status.Addresses, wantAddrs)
	}
	if n.Status.DaemonEndpoints.KubeletEndpoint.Port != 10250 {
		t.Errorf("kubelet port = %d, want 10250", n.Status.DaemonEndpoints.KubeletEndpoint.Port)
	}
	wantInfo := v1.NodeSystemInfo{
		MachineID: "mid", SystemUUID: "uuid", BootID: "boot", KernelVersion: "6.1.0-test",
		OSImage: "Debian GNU/Linux 12 (bookworm)", ContainerRuntimeVersion: "containerd://1.6.20~ds1",
		KubeletVersion: version.KubeletVersion, OperatingSystem: "linux", Architecture: "amd64",
	}
	if n.Status.NodeInfo != wantInfo {
		t.Errorf("nodeInfo = %+v\nwant %+v", n.Status.NodeInfo, wantInfo)
	}
	wantImages := []v1.ContainerImage{
		{Names: []string{"a@sha256:1", "a:1", "a:2", "a:3", "a:4"}, SizeBytes: 300},
		{Names: []string{"b:1"}, SizeBytes: 200},
	}
	if !reflect.DeepEqual(n.Status.Images, wantImages) {
		t.Errorf("images = %v, want the two largest with at most 5 names: %v", n.Status.Images, wantImages)
	}

	var types []v1.NodeConditionType
	for _, c := range n.Status.Conditions {
		types = append(types, c.Type)
		if !c.LastHeartbeatTime.Time.Equal(testStart) || !c.LastTransitionTime.Time.Equal(testStart) {
			t.Errorf("%s times = %v/%v, want %v", c.Type, c.LastHeartbeatTime, c.LastTransitionTime, testStart)
		}
	}
	if want := conditionOrder; !reflect.DeepEqual(types, want) {
		t.Errorf("conditions = %v, want %v", types, want)
	}
	if r := condition(n, v1.NodeReady); r.Status != v1.ConditionTrue || r.Reason != "KubeletReady" || r.Message != "kubelet is posting ready status" {
		t.Errorf("Ready = %+v", r)
	}
	if m := condition(n, v1.NodeMemoryPressure); m.Status != v1.ConditionFalse || m.Reason != "KubeletHasSufficientMemory" {
		t.Errorf("MemoryPressure = %+v", m)
	}

	wantEvents := []string{
		"Normal NodeHasSufficientMemory Node worker-1 status is now: NodeHasSufficientMemory",
		"Normal NodeHasNoDiskPressure Node worker-1 status is now: NodeHasNoDiskPressure",
		"Normal NodeHasSufficientPID Node worker-1 status is now: NodeHasSufficientPID",
		"Normal NodeReady Node worker-1 status is now: NodeReady",
	}
	if got := e.events(); !reflect.DeepEqual(got, wantEvents) {
		t.Errorf("events = %q, want %q", got, wantEvents)
	}
	if !e.ctrl.Registered() {
		t.Error("Registered() = false after registration")
	}
	alloc := e.ctrl.Node().Status.Allocatable[v1.ResourceMemory]
	if alloc.String() != "5532Mi" {
		t.Errorf("Node() allocatable memory = %s", alloc.String())
	}
}

func TestRegisterUnhealthyNodeIsNotReadyWithoutEvent(t *testing.T) {
	e := newEnv(t, testOptions())
	e.health.set(errors.New("container runtime is down"))
	if err := e.ctrl.register(context.Background()); err != nil {
		t.Fatal(err)
	}
	r := condition(e.node(t), v1.NodeReady)
	if r.Status != v1.ConditionFalse || r.Reason != "KubeletNotReady" || r.Message != "container runtime is down" {
		t.Errorf("Ready = %+v, want False/KubeletNotReady with the health error", r)
	}
	want := []string{"NodeHasSufficientMemory", "NodeHasNoDiskPressure", "NodeHasSufficientPID"}
	if got := e.reasons(); !reflect.DeepEqual(got, want) {
		t.Errorf("events = %v, want %v", got, want)
	}
}

func TestRegisterAdoptsExistingNode(t *testing.T) {
	existing := &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: testNode, UID: "uid-1", Labels: map[string]string{
			"kubernetes.io/hostname": "stale", "tier": "changed-by-admin",
		}},
		Spec: v1.NodeSpec{Taints: []v1.Taint{{Key: "admin", Effect: v1.TaintEffectNoExecute}}},
		Status: v1.NodeStatus{Conditions: []v1.NodeCondition{
			{Type: v1.NodeMemoryPressure, Status: v1.ConditionFalse, LastTransitionTime: metav1.NewTime(testStart.Add(-time.Hour))},
			{Type: v1.NodeReady, Status: v1.ConditionUnknown, Reason: "NodeStatusUnknown"},
		}},
	}
	e := newEnv(t, testOptions(), existing)
	ctx := context.Background()
	if err := e.ctrl.register(ctx); err != nil {
		t.Fatal(err)
	}
	n := e.node(t)
	if n.Labels["kubernetes.io/hostname"] != testNode || n.Labels["kubernetes.io/os"] != runtime.GOOS {
		t.Errorf("owned labels not reconciled: %v", n.Labels)
	}
	if n.Labels["tier"] != "changed-by-admin" {
		t.Errorf("--node-labels overwrote an administrator's change on an existing node: %v", n.Labels)
	}
	if len(n.Spec.Taints) != 1 || n.Spec.Taints[0].Key != "admin" {
		t.Errorf("taints of an existing node changed: %v", n.Spec.Taints)
	}
	if got := e.events(); len(got) != 0 {
		t.Errorf("events before the first status post: %v", got)
	}

	e.ctrl.updateStatus(ctx)
	n = e.node(t)
	if cpu := n.Status.Capacity[v1.ResourceCPU]; cpu.String() != "4" {
		t.Errorf("capacity not posted to the existing node: %v", n.Status.Capacity)
	}
	if r := condition(n, v1.NodeReady); r.Status != v1.ConditionTrue || !r.LastTransitionTime.Time.Equal(testStart) {
		t.Errorf("Ready = %+v, want True since now", r)
	}
	if m := condition(n, v1.NodeMemoryPressure); !m.LastTransitionTime.Time.Equal(testStart.Add(-time.Hour)) {
		t.Errorf("MemoryPressure transition time moved without a change: %v", m.LastTransitionTime)
	}
	want := []string{"NodeHasSufficientMemory", "NodeHasNoDiskPressure", "NodeHasSufficientPID", "NodeReady"}
	if got := e.reasons(); !reflect.DeepEqual(got, want) {
		t.Errorf("events = %v, want %v", got, want)
	}
}

func TestRegisterRetriesWithBackoff(t *testing.T) {
	e := newEnv(t, testOptions())
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "nodes"}, testNode, errors.New("no"))
	failN(e.client, "create", "nodes", 3, forbidden)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() { e.ctrl.Run(ctx); close(done) }()

	for i, wait := range []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond} {
		testutil.Eventually(t, "a back-off wait", func() bool { return e.count("create", "nodes", "") == i+1 && e.clock.HasWaiters() })
		e.clock.Step(wait - time.Millisecond)
		if n := e.count("create", "nodes", ""); n != i+1 {
			t.Fatalf("retried before the %v back-off: %d creates", wait, n)
		}
		e.clock.Step(time.Millisecond)
	}
	testutil.Eventually(t, "registration", e.ctrl.Registered)
	if got := e.reasons(); len(got) == 0 || got[0] != "Starting" {
		t.Errorf("events = %v, want Starting first", got)
	}
	cancel()
	<-done
}

func TestRegisterDisabledWaitsForTheNode(t *testing.T) {
	opts := testOptions()
	opts.Register = false
	e := newEnv(t, opts)
	ctx := context.Background()
	if err := e.ctrl.register(ctx); !apierrors.IsNotFound(err) {
		t.Fatalf("register() = %v, want NotFound while nobody created the node", err)
	}
	if err := e.client.Tracker().Add(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: testNode}}); err != nil {
		t.Fatal(err)
	}
	if err := e.ctrl.register(ctx); err != nil {
		t.Fatal(err)
	}
	if n := e.count("create", "nodes", ""); n != 0 {
		t.Errorf("%d creates with registerNode=false", n)
	}
}

func TestNewRejectsBadReservations(t *testing.T) {
	opts := testOptions()
	opts.EvictionHard = map[string]string{"memory.available": "lots"}
	if _, err := New(opts, Deps{Client: kubeclienttest.FromClientset(fakeClient()), Machine: testMachine()}); err == nil {
		t.Error("New accepted an unparsable eviction threshold")
	}
}

func TestRegisterSetsProviderIDAndAttachDetachAnnotation(t *testing.T) {
	opts := testOptions()
	opts.ProviderID, opts.ControllerAttachDetach = "aws:///eu-west-1a/i-0123", true
	e := newEnv(t, opts)
	if err := e.ctrl.register(context.Background()); err != nil {
		t.Fatal(err)
	}
	n := e.node(t)
	if n.Spec.ProviderID != opts.ProviderID {
		t.Errorf("providerID = %q, want %q", n.Spec.ProviderID, opts.ProviderID)
	}
	if n.Annotations[AnnotationControllerAttachDetach] != "true" {
		t.Errorf("annotations = %v, want %s=true", n.Annotations, AnnotationControllerAttachDetach)
	}
}

func TestRegisterReconcilesTheAttachDetachAnnotation(t *testing.T) {
	for _, want := range []bool{true, false} {
		existing := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: testNode, UID: "uid-1"}}
		if !want {
			existing.Annotations = map[string]string{AnnotationControllerAttachDetach: "true", "keep": "me"}
		}
		opts := testOptions()
		opts.ControllerAttachDetach = want
		e := newEnv(t, opts, existing)
		if err := e.ctrl.register(context.Background()); err != nil {
			t.Fatal(err)
		}
		n := e.node(t)
		if _, got := n.Annotations[AnnotationControllerAttachDetach]; got != want {
			t.Errorf("enableControllerAttachDetach=%v: annotations of the existing node = %v", want, n.Annotations)
		}
		if !want && n.Annotations["keep"] != "me" {
			t.Errorf("removing the annotation dropped another: %v", n.Annotations)
		}
	}
}
