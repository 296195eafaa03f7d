package cmpolicy

import (
	"fmt"
	"maps"
	"slices"
	"strconv"

	"k8s.io/klog/v2"
)

// The topology manager policy options nodelet implements (topologyManagerPolicyOptions), both
// the upstream kubelet v1.33 knows: prefer-closest-numa-nodes is GA there, max-allowable-numa-nodes
// beta (on by default).
const (
	OptionPreferClosestNUMANodes = "prefer-closest-numa-nodes"
	OptionMaxAllowableNUMANodes  = "max-allowable-numa-nodes"
)

// defaultMaxNUMANodes is how many NUMA nodes the manager handles unless
// max-allowable-numa-nodes raises it: the merge tries every combination of hints, which grows
// fast with the node count.
const defaultMaxNUMANodes = 8

// TopologyOptions are the parsed topologyManagerPolicyOptions.
type TopologyOptions struct {
	// PreferClosestNUMA ranks placements of equal size by their nodes' distance instead of by
	// their node numbers.
	PreferClosestNUMA bool
	// MaxAllowableNUMANodes is the most NUMA nodes a machine may have for a policy other than none.
	MaxAllowableNUMANodes int
}

// ParseTopologyOptions checks and parses topologyManagerPolicyOptions, refusing an unknown
// option or a bad value with upstream's message.
func ParseTopologyOptions(raw map[string]string) (TopologyOptions, error) {
	opts := TopologyOptions{MaxAllowableNUMANodes: defaultMaxNUMANodes}
	// Sorted, so that every run names the same first problem.
	for _, name := range slices.Sorted(maps.Keys(raw)) {
		value := raw[name]
		switch name {
		case OptionPreferClosestNUMANodes:
			on, err := strconv.ParseBool(value)
			if err != nil {
				return opts, fmt.Errorf("bad value for option %q: %w", name, err)
			}
			opts.PreferClosestNUMA = on
		case OptionMaxAllowableNUMANodes:
			n, err := strconv.Atoi(value)
			if err != nil {
				return opts, fmt.Errorf("unable to convert policy option to integer %q: %w", name, err)
			}
			if n < defaultMaxNUMANodes {
				return opts, fmt.Errorf("the minimum value of %q should not be less than %v", name, defaultMaxNUMANodes)
			}
			if n > defaultMaxNUMANodes {
				klog.InfoS("The value of max-allowable-numa-nodes is more than the recommended default: admission may take long on large machines",
					"maxAllowableNUMANodes", n, "default", defaultMaxNUMANodes)
			}
			opts.MaxAllowableNUMANodes = n
		default:
			return opts, fmt.Errorf("unknown Topology Manager Policy option: %q", name)
		}
	}
	return opts, nil
}
