package config

import (
	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"

	"github.com/nodelet/nodelet/internal/cm/cmpolicy"
)

// checkTopologyManager refuses topologyManagerPolicyOptions the topology manager does not know or
// whose value it cannot parse, with upstream's message. The policy and scope are checked with
// the other enumerations (checkCgroups); the machine-dependent limit (max-allowable-numa-nodes)
// is checked at start, once the machine's NUMA nodes are read.
func (v *validator) checkTopologyManager(kc *kubeletconfigv1beta1.KubeletConfiguration) {
	if _, err := cmpolicy.ParseTopologyOptions(kc.TopologyManagerPolicyOptions); err != nil {
		v.add("topologyManagerPolicyOptions", "%v", err)
	}
}
