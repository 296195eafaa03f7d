package csi

import (
	"context"
	"encoding/json"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/nodelet/nodelet/internal/lib/kubeclient/kubeclienttest"
)

func TestNodePatchMergesTheNodeIDAnnotationAndAddsTopologyLabels(t *testing.T) {
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{
		ResourceVersion: "7",
		Annotations:     map[string]string{annotationNodeID: `{"other.csi":"n-other"}`},
		Labels:          map[string]string{"topology.fake/zone": "z1"},
	}}
	patch, err := nodePatch(node, fakeDriver, "node-1", map[string]string{"topology.fake/zone": "z1", "topology.fake/rack": "r9"})
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Metadata struct {
			ResourceVersion string            `json:"resourceVersion"`
			Annotations     map[string]string `json:"annotations"`
			Labels          map[string]string `json:"labels"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(patch, &got); err != nil {
		t.Fatal(err)
	}
	ids := map[string]string{}
	if err := json.Unmarshal([]byte(got.Metadata.Annotations[annotationNodeID]), &ids); err != nil {
		t.Fatal(err)
	}
	if got.Metadata.ResourceVersion != "7" || ids["other.csi"] != "n-other" || ids[fakeDriver] != "node-1" || len(ids) != 2 {
		t.Fatalf("patch = %s", patch)
	}
	if len(got.Metadata.Labels) != 1 || got.Metadata.Labels["topology.fake/rack"] != "r9" {
		t.Fatalf("labels patched = %v, want only the missing one", got.Metadata.Labels)
	}

	node.Annotations[annotationNodeID] = `{"fake.csi":"node-1"}`
	node.Labels["topology.fake/rack"] = "r9"
	if patch, _ := nodePatch(node, fakeDriver, "node-1", map[string]string{"topology.fake/rack": "r9"}); patch != nil {
		t.Fatalf("nothing to change, yet patch = %s", patch)
	}
	patch, _ = nodePatch(node, fakeDriver, "", nil)
	if string(patch) != `{"metadata":{"annotations":{"csi.volume.kubernetes.io/nodeid":null},"resourceVersion":"7"}}` {
		t.Fatalf("removing the last driver: patch = %s", patch)
	}
}

func TestInstallDriverKeepsTheCSINode(t *testing.T) {
	cs := fake.NewClientset(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1", UID: "node-uid"}})
	var observed *v1.Node
	objs := NewAPIObjects(kubeclienttest.FromClientset(cs), "node-1", func(n *v1.Node) { observed = n })
	ctx := context.Background()
	if err := objs.Initialize(ctx); err != nil {
		t.Fatal(err)
	}
	info := nodeInfo{nodeID: "n1", maxVolumes: 7, topology: map[string]string{"topology.fake/zone": "z1"}}
	if err := objs.InstallDriver(ctx, fakeDriver, info); err != nil {
		t.Fatal(err)
	}
	if err := objs.InstallDriver(ctx, "other.csi", nodeInfo{nodeID: "n2"}); err != nil {
		t.Fatal(err)
	}
	cn, err := cs.StorageV1().CSINodes().Get(ctx, "node-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(cn.OwnerReferences) != 1 || cn.OwnerReferences[0].UID != "node-uid" || cn.OwnerReferences[0].Kind != "Node" {
		t.Fatalf("owner references = %+v", cn.OwnerReferences)
	}
	if len(cn.Spec.Drivers) != 2 {
		t.Fatalf("drivers = %+v", cn.Spec.Drivers)
	}
	d := cn.Spec.Drivers[0]
	if d.Name != fakeDriver || d.NodeID != "n1" || d.Allocatable == nil || *d.Allocatable.Count != 7 ||
		len(d.TopologyKeys) != 1 || d.TopologyKeys[0] != "topology.fake/zone" {
		t.Fatalf("driver entry = %+v", d)
	}
	node, _ := cs.CoreV1().Nodes().Get(ctx, "node-1", metav1.GetOptions{})
	if observed == nil || observed.Labels["topology.fake/zone"] != "z1" {
		t.Fatalf("the patched Node was not handed on: %v", observed)
	}
	if node.Labels["topology.fake/zone"] != "z1" || node.Annotations[annotationNodeID] != `{"fake.csi":"n1","other.csi":"n2"}` {
		t.Fatalf("node labels %v, annotations %v", node.Labels, node.Annotations)
	}

	if err := objs.UninstallDriver(ctx, fakeDriver); err != nil {
		t.Fatal(err)
	}
	cn, _ = cs.StorageV1().CSINodes().Get(ctx, "node-1", metav1.GetOptions{})
	node, _ = cs.CoreV1().Nodes().Get(ctx, "node-1", metav1.GetOptions{})
	if len(cn.Spec.Drivers) != 1 || cn.Spec.Drivers[0].Name != "other.csi" || node.Annotations[annotationNodeID] != `{"other.csi":"n2"}` {
		t.Fatalf("after uninstall: drivers %+v, annotation %q", cn.Spec.Drivers, node.Annotations[annotationNodeID])
	}
}
