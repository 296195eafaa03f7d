//go:build real

package node

import (
	"context"
	"os"
	"reflect"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/record"

	"github.com/nodelet/nodelet/internal/host/machine"
	"github.com/nodelet/nodelet/internal/lib/kubeclient/kubeclienttest"
)

// TestRealAPIServer runs the Node and Lease controllers against a real API server.
//
//	NODELET_E2E_KUBECONFIG        kubeconfig of identity system:node:<name> (required, else skipped)
//	NODELET_E2E_ADMIN_KUBECONFIG  admin kubeconfig for checks and clean-up (optional)
//	NODELET_E2E_NODE_NAME         node name (default nodetest)
//	NODELET_E2E_DURATION          how long to run the controllers (default 25s)
func TestRealAPIServer(t *testing.T) {
	kubeconfig := os.Getenv("NODELET_E2E_KUBECONFIG")
	if kubeconfig == "" {
		t.Skip("NODELET_E2E_KUBECONFIG not set")
	}
	name := envOr("NODELET_E2E_NODE_NAME", "nodetest")
	duration, err := time.ParseDuration(envOr("NODELET_E2E_DURATION", "25s"))
	if err != nil {
		t.Fatal(err)
	}
	client := clientFor(t, kubeconfig)
	admin := client
	if p := os.Getenv("NODELET_E2E_ADMIN_KUBECONFIG"); p != "" {
		admin = clientFor(t, p)
	}
	ctx := context.Background()
	cleanup := func() {
		for _, err := range []error{
			admin.CoordinationV1().Leases(LeaseNamespace).Delete(ctx, name, metav1.DeleteOptions{}),
			admin.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{}),
		} {
			if err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("clean-up: %v", err)
			}
		}
		if admin != client { // events are not the node's to delete
			err := admin.CoreV1().Events(metav1.NamespaceDefault).DeleteCollection(ctx, metav1.DeleteOptions{},
				metav1.ListOptions{FieldSelector: "involvedObject.kind=Node,involvedObject.name=" + name})
			if err != nil {
				t.Errorf("clean-up of events: %v", err)
			}
		}
	}
	cleanup() // a previous run may have been interrupted
	t.Cleanup(cleanup)

	broadcaster := record.NewBroadcaster()
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
	defer broadcaster.Shutdown()
	opts := Options{
		NodeName: name, Register: true, MaxPods: 110, MaxImages: DefaultMaxImages,
		Labels:       map[string]string{"nodelet.io/e2e": "true"},
		Taints:       []v1.Taint{{Key: "nodelet.io/e2e", Value: "true", Effect: v1.TaintEffectNoSchedule}},
		KubeReserved: map[string]string{"cpu": "100m", "memory": "100Mi"},
		EvictionHard: map[string]string{"memory.available": "100Mi", "nodefs.available": "10%"},
		RootDir:      os.TempDir(),
	}
	deps := Deps{
		Client: kubeclienttest.FromClientset(client), Heartbeat: kubeclienttest.FromClientset(client),
		Recorder: broadcaster.NewRecorder(scheme.Scheme, v1.EventSource{Component: "nodelet", Host: name}),
		Runtime:  &fakeRuntime{name: "containerd", version: "e2e"}, Machine: hostMachine(t),
		Images: &fakeImages{images: []v1.ContainerImage{{Names: []string{"nodelet.local/e2e:v1"}, SizeBytes: 1 << 20}}},
	}
	ctrl, err := New(opts, deps)
	if err != nil {
		t.Fatal(err)
	}
	leases, err := NewLeaseController(opts, deps)
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{}, 2)
	go func() { ctrl.Run(runCtx); done <- struct{}{} }()
	go func() { leases.Run(runCtx); done <- struct{}{} }()
	stop := func() { cancel(); <-done; <-done }
	defer func() {
		if runCtx.Err() == nil {
			stop()
		}
	}()

	var firstRenew time.Time
	deadline := time.Now().Add(duration)
	for time.Now().Before(deadline) {
		time.Sleep(time.Second)
		if l, err := client.CoordinationV1().Leases(LeaseNamespace).Get(ctx, name, metav1.GetOptions{}); err == nil && firstRenew.IsZero() {
			firstRenew = l.Spec.RenewTime.Time
		}
	}
	if !ctrl.Registered() {
		t.Fatal("the node never registered")
	}

	node, err := client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	checkE2ENode(t, node)
	lease, err := client.CoordinationV1().Leases(LeaseNamespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !lease.Spec.RenewTime.Time.After(firstRenew) {
		t.Errorf("lease renew time %v did not advance past %v", lease.Spec.RenewTime, firstRenew)
	}
	if *lease.Spec.HolderIdentity != name || *lease.Spec.LeaseDurationSeconds != 40 {
		t.Errorf("lease holder %q duration %d", *lease.Spec.HolderIdentity, *lease.Spec.LeaseDurationSeconds)
	}
	if refs := lease.OwnerReferences; len(refs) != 1 || refs[0].UID != node.UID || refs[0].Kind != "Node" {
		t.Errorf("lease owner references = %v, want the Node %s", refs, node.UID)
	}
	if admin != client {
		checkE2EEvents(t, admin, name)
	}
	stop()
	checkE2ERestart(t, opts, deps, admin)
}

// checkE2ERestart starts a second Controller, as after a nodelet restart: it must adopt the
// existing Node, put back a label it owns and post its new (dual-stack) addresses.
func checkE2ERestart(t *testing.T, opts Options, deps Deps, admin kubernetes.Interface) {
	t.Helper()
	ctx := context.Background()
	patch := []byte(`{"metadata":{"labels":{"kubernetes.io/hostname":"stale"}}}`)
	if _, err := admin.CoreV1().Nodes().Patch(ctx, opts.NodeName, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	opts.NodeIPs = []string{"192.0.2.77", "2001:db8::77"}
	ctrl, err := New(opts, deps)
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	ctrl.Run(runCtx)
	if !ctrl.Registered() {
		t.Fatal("the restarted controller did not adopt the node")
	}
	node, err := admin.CoreV1().Nodes().Get(ctx, opts.NodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := node.Labels[v1.LabelHostname]; got != opts.NodeName {
		t.Errorf("hostname label = %q after restart, want %q", got, opts.NodeName)
	}
	if c := condition(node, v1.NodeReady); c.Status != v1.ConditionTrue {
		t.Errorf("Ready = %+v after restart", c)
	}
	want := []v1.NodeAddress{
		{Type: v1.NodeInternalIP, Address: "192.0.2.77"}, {Type: v1.NodeInternalIP, Address: "2001:db8::77"},
		{Type: v1.NodeHostName, Address: opts.NodeName},
	}
	if !reflect.DeepEqual(node.Status.Addresses, want) {
		t.Errorf("addresses after restart = %v, want %v", node.Status.Addresses, want)
	}
}

func checkE2ENode(t *testing.T, node *v1.Node) {
	t.Helper()
	ready := condition(node, v1.NodeReady)
	if ready.Status != v1.ConditionTrue || ready.Reason != readyReason {
		t.Errorf("Ready = %+v", ready)
	}
	for _, typ := range []v1.NodeConditionType{v1.NodeMemoryPressure, v1.NodeDiskPressure, v1.NodePIDPressure} {
		if c := condition(node, typ); c.Status != v1.ConditionFalse {
			t.Errorf("%s = %+v", typ, c)
		}
	}
	for _, r := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory, v1.ResourcePods, v1.ResourceEphemeralStorage} {
		c, a := node.Status.Capacity[r], node.Status.Allocatable[r]
		if c.IsZero() || a.IsZero() || a.Cmp(c) > 0 {
			t.Errorf("%s capacity %s allocatable %s", r, c.String(), a.String())
		}
	}
	info := node.Status.NodeInfo
	if info.MachineID == "" || info.BootID == "" || info.KernelVersion == "" || info.OSImage == "" ||
		info.ContainerRuntimeVersion != "containerd://e2e" || info.KubeletVersion == "" {
		t.Errorf("nodeInfo = %+v", info)
	}
	if len(node.Status.Addresses) < 2 || node.Status.DaemonEndpoints.KubeletEndpoint.Port != 10250 {
		t.Errorf("addresses %v, endpoints %+v", node.Status.Addresses, node.Status.DaemonEndpoints)
	}
	if len(node.Status.Images) != 1 || node.Labels["nodelet.io/e2e"] != "true" || len(node.Spec.Taints) != 1 {
		t.Errorf("images %v labels %v taints %v", node.Status.Images, node.Labels, node.Spec.Taints)
	}
	t.Logf("node %s: capacity %v allocatable %v addresses %v info %+v", node.Name,
		quantities(t, node.Status.Capacity), quantities(t, node.Status.Allocatable), node.Status.Addresses, info)
}

func checkE2EEvents(t *testing.T, admin kubernetes.Interface, name string) {
	t.Helper()
	events, err := admin.CoreV1().Events(metav1.NamespaceDefault).List(context.Background(), metav1.ListOptions{
		FieldSelector: "involvedObject.kind=Node,involvedObject.name=" + name,
	})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, ev := range events.Items {
		seen[ev.Reason] = true
	}
	for _, reason := range []string{"Starting", "NodeHasSufficientMemory", "NodeHasNoDiskPressure", "NodeHasSufficientPID", "NodeReady"} {
		if !seen[reason] {
			t.Errorf("no %s event for node %s (saw %v)", reason, name, seen)
		}
	}
}

func clientFor(t *testing.T, kubeconfig string) kubernetes.Interface {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// hostMachine reads this machine's facts, as nodelet does at start.
func hostMachine(t *testing.T) *machine.Machine {
	m, err := machine.ReadMachine(machine.HostPaths())
	if err != nil {
		t.Logf("some machine facts are missing: %v", err)
	}
	return m
}
