package main

import (
	"context"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
)

// inUseChecker reads, when the kubelet stages or publishes a volume, whether the Node lists
// it in status.volumesInUse, so tests can check the kubelet waited for that as upstream does.
type inUseChecker struct {
	cs           kubernetes.Interface
	node, driver string
}

// newInUseChecker returns nil without a kubeconfig.
func newInUseChecker(o options) *inUseChecker {
	if o.kubeconfig == "" {
		return nil
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", o.kubeconfig)
	if err == nil {
		var cs kubernetes.Interface
		if cs, err = kubernetes.NewForConfig(cfg); err == nil {
			return &inUseChecker{cs: cs, node: o.nodeID, driver: o.name}
		}
	}
	klog.ErrorS(err, "No API access; not checking volumesInUse")
	return nil
}

// listed reads the Node from the API server (not a cache); nil when it cannot be read.
func (c *inUseChecker) listed(volumeID string) *bool {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	n, err := c.cs.CoreV1().Nodes().Get(ctx, c.node, metav1.GetOptions{})
	if err != nil {
		klog.ErrorS(err, "Reading the node for its volumesInUse", "node", c.node)
		return nil
	}
	want := v1.UniqueVolumeName("kubernetes.io/csi/" + c.driver + "^" + volumeID)
	for _, name := range n.Status.VolumesInUse {
		if name == want {
			return &[]bool{true}[0]
		}
	}
	return &[]bool{false}[0]
}
