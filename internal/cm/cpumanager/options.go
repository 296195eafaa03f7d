package cpumanager

import (
	"fmt"
	"slices"
	"strconv"
)

// The policies, by upstream's names.
const (
	PolicyNone   = "none"
	PolicyStatic = "static"
)

// The static policy's options nodelet implements, by upstream's names.
const (
	// OptionFullPCPUsOnly gives containers whole cores only, refusing a request that is not
	// a multiple of the hyperthreads per core (SMTAlignmentError).
	OptionFullPCPUsOnly = "full-pcpus-only"
	// OptionDistributeCPUsAcrossNUMA spreads a request that needs several NUMA nodes evenly
	// over them instead of filling one first.
	OptionDistributeCPUsAcrossNUMA = "distribute-cpus-across-numa"
)

// unimplementedOptions are upstream's other static policy options: refused by name, so that
// a configuration asking for them does not run without them.
var unimplementedOptions = []string{
	"align-by-socket", "distribute-cpus-across-cores", "strict-cpu-reservation", "prefer-align-cpus-by-uncorecache",
}

// policyOptions are the parsed options of the static policy.
type policyOptions struct {
	fullPCPUsOnly        bool
	distributeAcrossNUMA bool
}

// CheckOptions returns an error naming the first option of options that policy does not take
// (the none policy takes none), or whose value is not a boolean.
func CheckOptions(policy string, options map[string]string) error {
	_, err := parseOptions(policy, options)
	return err
}

func parseOptions(policy string, options map[string]string) (policyOptions, error) {
	var opts policyOptions
	if policy == PolicyNone && len(options) > 0 {
		return opts, fmt.Errorf("None policy: received unsupported options=%v", options)
	}
	names := make([]string, 0, len(options))
	for name := range options {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		var field *bool
		switch name {
		case OptionFullPCPUsOnly:
			field = &opts.fullPCPUsOnly
		case OptionDistributeCPUsAcrossNUMA:
			field = &opts.distributeAcrossNUMA
		default:
			if slices.Contains(unimplementedOptions, name) {
				return opts, fmt.Errorf("CPU Manager Policy option %q is not supported by nodelet (it implements %s and %s)", name, OptionFullPCPUsOnly, OptionDistributeCPUsAcrossNUMA)
			}
			return opts, fmt.Errorf("unknown CPU Manager Policy option: %q", name)
		}
		on, err := strconv.ParseBool(options[name])
		if err != nil {
			return opts, fmt.Errorf("bad value for option %q: %w", name, err)
		}
		*field = on
	}
	return opts, nil
}
