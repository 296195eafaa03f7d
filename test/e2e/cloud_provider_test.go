//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodelet/nodelet/internal/testutil"
)

// --cloud-provider=external on the real API server: the Node is registered with the
// uninitialized taint and the provided-node-ip annotation, and the addresses a cloud
// controller manager then sets are left as they are, status update after status update.
// The Node is deleted before (so it is registered anew) and after (so later tests register
// it without the taint).
func TestExternalCloudProviderRegistration(t *testing.T) {
	admin := adminClient(t)
	deleteNode := func() {
		err := admin.CoreV1().Nodes().Delete(context.Background(), nodeName, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Fatalf("deleting the Node: %v", err)
		}
	}
	deleteNode()
	t.Cleanup(deleteNode) // after nodelet's own cleanup has stopped it
	startNodelet(t, "--kubeconfig="+nodeKubeconfig(t), "--client-ca-file="+clusterCA,
		"--cloud-provider=external", "--node-ip=127.0.0.1", "--node-status-update-frequency=1s")

	var node *v1.Node
	testutil.WaitFor(t, 30*time.Second, "the Node registered", func() (bool, string) {
		n, err := admin.CoreV1().Nodes().Get(context.Background(), nodeName, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		node = n
		return true, ""
	})
	uninitialized := v1.Taint{Key: "node.cloudprovider.kubernetes.io/uninitialized", Value: "true", Effect: v1.TaintEffectNoSchedule}
	if !slices.ContainsFunc(node.Spec.Taints, func(t v1.Taint) bool { return t.MatchTaint(&uninitialized) && t.Value == "true" }) {
		t.Errorf("taints %v, want %v", node.Spec.Taints, uninitialized)
	}
	if got := node.Annotations["alpha.kubernetes.io/provided-node-ip"]; got != "127.0.0.1" {
		t.Errorf("provided-node-ip annotation %q, want 127.0.0.1", got)
	}

	// The cloud controller manager sets the addresses; nodelet keeps them.
	cloud := []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "10.9.8.7"}, {Type: v1.NodeExternalIP, Address: "203.0.113.9"},
		{Type: v1.NodeHostName, Address: "ip-10-9-8-7.example.internal"}}
	// The port nodelet owns is spoilt too, so its next status update has something to post.
	patch, _ := json.Marshal(map[string]any{"status": map[string]any{"addresses": cloud,
		"daemonEndpoints": map[string]any{"kubeletEndpoint": map[string]any{"Port": 1}}}})
	if _, err := admin.CoreV1().Nodes().Patch(context.Background(), nodeName, types.MergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second) // several status updates
	var n *v1.Node
	for time.Now().Before(deadline) {
		var err error
		if n, err = admin.CoreV1().Nodes().Get(context.Background(), nodeName, metav1.GetOptions{}); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(n.Status.Addresses, cloud) {
			t.Fatalf("addresses %v, want the cloud controller's %v", n.Status.Addresses, cloud)
		}
		time.Sleep(500 * time.Millisecond)
	}
	// nodelet put its port back, so it did post its status: the addresses were kept, not just
	// not yet redone.
	if port := n.Status.DaemonEndpoints.KubeletEndpoint.Port; port == 1 {
		t.Fatal("no status posted since the addresses were set")
	}
}
