package node

import (
	"context"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// With an external cloud provider the Node is registered with the uninitialized taint and the
// provided-node-ip annotation, as upstream.
func TestRegisterForExternalCloudProvider(t *testing.T) {
	opts := testOptions()
	opts.ExternalCloudProvider = true
	opts.NodeIPs = []string{"192.0.2.10", "2001:db8::10"}
	e := newEnv(t, opts)
	if err := e.ctrl.register(context.Background()); err != nil {
		t.Fatal(err)
	}
	n := e.node(t)
	want := v1.Taint{Key: "node.cloudprovider.kubernetes.io/uninitialized", Value: "true", Effect: v1.TaintEffectNoSchedule}
	if !slices.ContainsFunc(n.Spec.Taints, func(t v1.Taint) bool { return t.MatchTaint(&want) && t.Value == "true" }) || len(n.Spec.Taints) != 2 {
		t.Errorf("taints = %v, want --register-with-taints' and %v", n.Spec.Taints, want)
	}
	if got := n.Annotations["alpha.kubernetes.io/provided-node-ip"]; got != "192.0.2.10,2001:db8::10" {
		t.Errorf("provided-node-ip = %q", got)
	}
	// Without a cloud provider: neither.
	e = newEnv(t, testOptions())
	if err := e.ctrl.register(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := e.node(t); len(n.Spec.Taints) != 1 || n.Annotations[AnnotationProvidedNodeIP] != "" {
		t.Errorf("no cloud provider: taints %v, annotations %v", n.Spec.Taints, n.Annotations)
	}
}

// The addresses the cloud controller manager set are left alone; with none yet and no
// --node-ip, only the Hostname is reported.
func TestExternalCloudProviderLeavesAddresses(t *testing.T) {
	cloud := []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "10.1.2.3"}, {Type: v1.NodeExternalIP, Address: "203.0.113.7"}}
	existing := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: testNode}, Status: v1.NodeStatus{Addresses: cloud}}
	opts := testOptions()
	opts.ExternalCloudProvider = true
	e := newEnv(t, opts, existing)
	ctx := context.Background()
	if err := e.ctrl.register(ctx); err != nil {
		t.Fatal(err)
	}
	e.ctrl.updateStatus(ctx)
	if got := e.node(t).Status.Addresses; !slices.Equal(got, cloud) {
		t.Errorf("addresses = %v, want the cloud controller's %v", got, cloud)
	}

	opts.NodeIPs = nil
	e = newEnv(t, opts)
	if err := e.ctrl.register(ctx); err != nil {
		t.Fatal(err)
	}
	if got := e.node(t).Status.Addresses; !slices.Equal(got, []v1.NodeAddress{{Type: v1.NodeHostName, Address: testNode}}) {
		t.Errorf("addresses = %v, want the Hostname only", got)
	}

	// No cloud provider: the node's own addresses replace whatever was there.
	e = newEnv(t, testOptions(), existing.DeepCopy())
	if err := e.ctrl.register(ctx); err != nil {
		t.Fatal(err)
	}
	e.ctrl.updateStatus(ctx)
	if got := e.node(t).Status.Addresses; len(got) != 2 || got[0].Address != "192.0.2.10" {
		t.Errorf("addresses = %v, want --node-ip's and the Hostname", got)
	}
}

func TestRegisterUnschedulable(t *testing.T) {
	opts := testOptions()
	opts.Unschedulable = true
	e := newEnv(t, opts)
	if err := e.ctrl.register(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !e.node(t).Spec.Unschedulable {
		t.Error("--register-schedulable=false: node registered schedulable")
	}
}
