package csi

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/nodelet/nodelet/internal/lib/kubeclient"
)

// annotationNodeID maps each driver to its node ID on the Node, as upstream keeps it.
const annotationNodeID = "csi.volume.kubernetes.io/nodeid"

// APIObjects keeps the node's CSINode, the node-ID annotation and the topology labels of
// the registered drivers through the API server.
type APIObjects struct {
	client   kubeclient.Interface
	nodeName string
	// patched receives the Node after each change of its labels or annotation; nil: nobody.
	patched func(*v1.Node)
}

// NewAPIObjects works on node nodeName; patched (may be nil) is told of every Node it
// changes, so a volume's node-affinity check sees new topology labels at once.
func NewAPIObjects(client kubeclient.Interface, nodeName string, patched func(*v1.Node)) *APIObjects {
	return &APIObjects{client: client, nodeName: nodeName, patched: patched}
}

// Initialize creates the node's CSINode, owned by the Node so it goes with it.
func (o *APIObjects) Initialize(ctx context.Context) error {
	_, err := o.csiNode(ctx)
	return err
}

// csiNode returns the node's CSINode, creating it when missing.
func (o *APIObjects) csiNode(ctx context.Context) (*storagev1.CSINode, error) {
	cn, err := o.client.StorageV1().CSINodes().Get(ctx, o.nodeName, metav1.GetOptions{})
	if err == nil || !apierrors.IsNotFound(err) {
		return cn, err
	}
	node, err := o.client.CoreV1().Nodes().Get(ctx, o.nodeName, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("reading the node to own its CSINode: %w", err)
	}
	cn = &storagev1.CSINode{
		ObjectMeta: metav1.ObjectMeta{
			Name: o.nodeName,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID,
			}},
		},
		Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{}},
	}
	return o.client.StorageV1().CSINodes().Create(ctx, cn, metav1.CreateOptions{})
}

// InstallDriver records the driver's node ID and topology on the Node and in the CSINode.
func (o *APIObjects) InstallDriver(ctx context.Context, name string, info nodeInfo) error {
	if err := o.patchNode(ctx, name, info.nodeID, info.topology); err != nil {
		return err
	}
	entry := storagev1.CSINodeDriver{Name: name, NodeID: info.nodeID, TopologyKeys: slices.Sorted(maps.Keys(info.topology))}
	if info.maxVolumes > 0 {
		entry.Allocatable = &storagev1.VolumeNodeResources{Count: ptr.To(int32(info.maxVolumes))}
	}
	return o.updateCSINode(ctx, func(drivers []storagev1.CSINodeDriver) []storagev1.CSINodeDriver {
		drivers = slices.DeleteFunc(drivers, func(d storagev1.CSINodeDriver) bool { return d.Name == name })
		return append(drivers, entry)
	})
}

// UninstallDriver takes the driver off the CSINode and the node-ID annotation; its topology
// labels stay, as upstream leaves them.
func (o *APIObjects) UninstallDriver(ctx context.Context, name string) error {
	if err := o.patchNode(ctx, name, "", nil); err != nil {
		return err
	}
	return o.updateCSINode(ctx, func(drivers []storagev1.CSINodeDriver) []storagev1.CSINodeDriver {
		return slices.DeleteFunc(drivers, func(d storagev1.CSINodeDriver) bool { return d.Name == name })
	})
}

func (o *APIObjects) updateCSINode(ctx context.Context, change func([]storagev1.CSINodeDriver) []storagev1.CSINodeDriver) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cn, err := o.csiNode(ctx)
		if err != nil {
			return err
		}
		cn = cn.DeepCopy()
		cn.Spec.Drivers = change(cn.Spec.Drivers)
		_, err = o.client.StorageV1().CSINodes().Update(ctx, cn, metav1.UpdateOptions{})
		return err
	})
}

// patchNode sets (or, with an empty nodeID, removes) the driver's entry of the node-ID
// annotation and adds its topology labels.
func (o *APIObjects) patchNode(ctx context.Context, name, nodeID string, topology map[string]string) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		node, err := o.client.CoreV1().Nodes().Get(ctx, o.nodeName, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("reading the node: %w", err)
		}
		patch, err := nodePatch(node, name, nodeID, topology)
		if err != nil || patch == nil {
			return err
		}
		updated, err := o.client.CoreV1().Nodes().Patch(ctx, o.nodeName, types.MergePatchType, patch, metav1.PatchOptions{})
		if err == nil && o.patched != nil {
			o.patched(updated)
		}
		return err
	})
}

// nodePatch is the merge patch that brings node's annotation and labels to the driver's
// values, nil when they are there already. The resourceVersion makes a concurrent change a
// conflict rather than a lost update.
func nodePatch(node *v1.Node, name, nodeID string, topology map[string]string) ([]byte, error) {
	ids := map[string]string{}
	if s := node.Annotations[annotationNodeID]; s != "" {
		if err := json.Unmarshal([]byte(s), &ids); err != nil {
			return nil, fmt.Errorf("the node's %s annotation is not a JSON map: %w", annotationNodeID, err)
		}
	}
	changed := false
	if nodeID == "" {
		_, changed = ids[name]
		delete(ids, name)
	} else if ids[name] != nodeID {
		ids[name], changed = nodeID, true
	}
	meta := map[string]any{"resourceVersion": node.ResourceVersion}
	if changed {
		var value any
		if len(ids) > 0 {
			b, err := json.Marshal(ids)
			if err != nil {
				return nil, err
			}
			value = string(b)
		}
		meta["annotations"] = map[string]any{annotationNodeID: value}
	}
	labels := map[string]any{}
	for k, v := range topology {
		if old, ok := node.Labels[k]; !ok || old != v {
			labels[k] = v
		}
	}
	if len(labels) > 0 {
		meta["labels"] = labels
	}
	if len(meta) == 1 {
		return nil, nil
	}
	return json.Marshal(map[string]any{"metadata": meta})
}
