package config

import "github.com/spf13/pflag"

// addTopologyFlags binds the topology manager's flags, under upstream's names.
func addTopologyFlags(fs *pflag.FlagSet, f *Flags) {
	bindField(f, fs.StringVar, "topology-manager-policy", func(kc *kubeletConfig) *string { return &kc.TopologyManagerPolicy },
		"How CPUs, memory and devices are aligned on NUMA nodes at admission: none, best-effort, restricted or single-numa-node.")
	bindField(f, fs.StringVar, "topology-manager-scope", func(kc *kubeletConfig) *string { return &kc.TopologyManagerScope },
		"What the topology manager aligns on one placement: each container, or the whole pod (container or pod).")
	bindField(f, fs.StringToStringVar, "topology-manager-policy-options", func(kc *kubeletConfig) *map[string]string { return &kc.TopologyManagerPolicyOptions },
		"Topology manager options: prefer-closest-numa-nodes=true, max-allowable-numa-nodes=N (at least 8).")
}
