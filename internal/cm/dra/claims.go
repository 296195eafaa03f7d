package dra

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
)

// errClaimNotCreated: the pod's claim comes from a template and the control plane has not made
// it yet (it names it in the pod's status.resourceClaimStatuses once it has).
var errClaimNotCreated = errors.New("ResourceClaim not created yet")

// claimName is the name of the ResourceClaim behind the pod's claim pc: named directly, or made
// from a template and named in the pod's status. "" (and no error) when the control plane
// decided no claim is needed; mustCheckOwner when the claim must be the pod's own.
func claimName(pod *v1.Pod, pc *v1.PodResourceClaim) (name string, mustCheckOwner bool, err error) {
	switch {
	case pc.ResourceClaimName != nil:
		return *pc.ResourceClaimName, false, nil
	case pc.ResourceClaimTemplateName != nil:
		for _, st := range pod.Status.ResourceClaimStatuses {
			if st.Name == pc.Name {
				if st.ResourceClaimName == nil {
					return "", true, nil
				}
				return *st.ResourceClaimName, true, nil
			}
		}
		return "", false, fmt.Errorf(`pod "%s/%s": %w`, pod.Namespace, pod.Name, errClaimNotCreated)
	default:
		return "", false, fmt.Errorf(`pod "%s/%s", spec.resourceClaim %q: none of the supported fields are set`, pod.Namespace, pod.Name, pc.Name)
	}
}

// checkOwner: a claim made from a template belongs to its pod alone.
func checkOwner(pod *v1.Pod, claim *resourceapi.ResourceClaim) error {
	if claim.Namespace != pod.Namespace || !metav1.IsControlledBy(claim, pod) {
		return fmt.Errorf("ResourceClaim %s/%s was not created for pod %s/%s (pod is not owner)", claim.Namespace, claim.Name, pod.Namespace, pod.Name)
	}
	return nil
}

// reservedFor: the scheduler reserved the claim for the pod (only then may the node use it).
func reservedFor(pod *v1.Pod, claim *resourceapi.ResourceClaim) bool {
	return slices.ContainsFunc(claim.Status.ReservedFor, func(r resourceapi.ResourceClaimConsumerReference) bool {
		return r.UID == pod.UID
	})
}

// newClaimInfo starts the cache entry of an allocated claim: one driver state per driver its
// allocation names, no devices until the drivers prepared them.
func newClaimInfo(claim *resourceapi.ResourceClaim) (*claimInfo, error) {
	if claim.Status.Allocation == nil {
		return nil, fmt.Errorf("claim %s/%s: not allocated", claim.Namespace, claim.Name)
	}
	st := claimState{ClaimUID: claim.UID, ClaimName: claim.Name, Namespace: claim.Namespace,
		PodUIDs: sets.New[string](), DriverState: map[string]driverState{}}
	for _, r := range claim.Status.Allocation.Devices.Results {
		st.DriverState[r.Driver] = driverState{}
	}
	return &claimInfo{claimState: st}, nil
}

// claimInfo is a cache entry: the checkpointed state and whether the drivers prepared it.
type claimInfo struct {
	claimState
	prepared bool
}

// restoredPrepared: an entry read back from the checkpoint is prepared when every driver of
// it recorded its devices (the checkpoint is written with the devices only after the drivers
// answered). Upstream asks the drivers again after a restart; nodelet trusts the checkpoint, so
// a restart between prepare and start does not prepare twice.
func restoredPrepared(st claimState) bool {
	for _, d := range st.DriverState {
		if len(d.Devices) == 0 {
			return false
		}
	}
	return true
}

// cdiIDs are the CDI device IDs of the claim's devices that serve request ("" for all), in
// driver name order.
func (c *claimInfo) cdiIDs(request string) []string {
	var ids []string
	for _, driver := range slices.Sorted(maps.Keys(c.DriverState)) {
		for _, d := range c.DriverState[driver].Devices {
			if request == "" || len(d.RequestNames) == 0 || slices.Contains(d.RequestNames, request) {
				ids = append(ids, d.CDIDeviceIDs...)
			}
		}
	}
	return ids
}
