package node

import (
	"context"
	"encoding/json"
	"fmt"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"

	"github.com/nodelet/nodelet/internal/lib/kubeclient"
)

// patchStatus sends the difference between old and desired status as a strategic merge patch
// of the status subresource, so conditions other components set in the meantime survive.
func patchStatus(ctx context.Context, client kubeclient.Interface, old, desired *v1.Node) (*v1.Node, error) {
	patch, err := statusPatch(old.Status, desired.Status)
	if err != nil {
		return nil, err
	}
	patched, err := client.CoreV1().Nodes().Patch(ctx, old.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
	if err != nil {
		return nil, fmt.Errorf("patching node status: %w", err)
	}
	return patched, nil
}

// statusPatch builds the patch. Addresses merge by type, which would fold a dual-stack pair of
// InternalIPs into one, so a changed address list replaces the old one whole.
func statusPatch(old, desired v1.NodeStatus) ([]byte, error) {
	oldJSON, err := json.Marshal(v1.Node{Status: old})
	if err != nil {
		return nil, err
	}
	newJSON, err := json.Marshal(v1.Node{Status: desired})
	if err != nil {
		return nil, err
	}
	patch, err := strategicpatch.CreateTwoWayMergePatch(oldJSON, newJSON, v1.Node{})
	if err != nil {
		return nil, fmt.Errorf("building node status patch: %w", err)
	}
	if apiequality.Semantic.DeepEqual(old.Addresses, desired.Addresses) {
		return patch, nil
	}
	var doc map[string]any
	if err := json.Unmarshal(patch, &doc); err != nil {
		return nil, err
	}
	status, _ := doc["status"].(map[string]any)
	if status == nil {
		status = map[string]any{}
		doc["status"] = status
	}
	addrs := []any{map[string]any{"$patch": "replace"}}
	for _, a := range desired.Addresses {
		addrs = append(addrs, map[string]any{"type": a.Type, "address": a.Address})
	}
	status["addresses"] = addrs
	delete(status, "$setElementOrder/addresses")
	return json.Marshal(doc)
}
