package cmpolicy

import (
	"fmt"
	"slices"
	"strconv"
)

// The CPU manager's policies (cpuManagerPolicy), by upstream's names.
const (
	CPUNone   = "none"
	CPUStatic = "static"
)

// The CPU manager static policy's options nodelet implements, by upstream's names.
const (
	// OptionFullPCPUsOnly gives containers whole cores only, refusing a request that is not
	// a multiple of the hyperthreads per core (SMTAlignmentError).
	OptionFullPCPUsOnly = "full-pcpus-only"
	// OptionDistributeCPUsAcrossNUMA spreads a request that needs several NUMA nodes evenly
	// over them instead of filling one first.
	OptionDistributeCPUsAcrossNUMA = "distribute-cpus-across-numa"
	// OptionStrictCPUReservation keeps the reserved CPUs out of the shared pool too, so only
	// the system's own processes run on them.
	OptionStrictCPUReservation = "strict-cpu-reservation"
)

// maturity is an option's stage upstream, which decides the feature gate it needs.
type maturity int

const (
	alpha maturity = iota + 1 // needs CPUManagerPolicyAlphaOptions
	beta                      // needs CPUManagerPolicyBetaOptions
	ga                        // needs no gate
)

// optionMaturity is every static policy option upstream 1.33 knows, by its stage there.
var optionMaturity = map[string]maturity{
	"align-by-socket":                  alpha,
	"distribute-cpus-across-cores":     alpha,
	"prefer-align-cpus-by-uncorecache": alpha,
	OptionStrictCPUReservation:         beta,
	OptionDistributeCPUsAcrossNUMA:     beta,
	OptionFullPCPUsOnly:                ga,
}

// CPUOptionGates are the feature gates that let options of each stage be used:
// CPUManagerPolicyAlphaOptions and CPUManagerPolicyBetaOptions.
type CPUOptionGates struct {
	Alpha bool
	Beta  bool
}

// DefaultCPUOptionGates are upstream 1.33's defaults: beta options allowed, alpha ones not.
var DefaultCPUOptionGates = CPUOptionGates{Beta: true}

// CPUOptions are the parsed options of the static policy.
type CPUOptions struct {
	FullPCPUsOnly        bool // OptionFullPCPUsOnly
	DistributeAcrossNUMA bool // OptionDistributeCPUsAcrossNUMA
	StrictReservation    bool // OptionStrictCPUReservation
}

// ParseCPUOptions parses cpuManagerPolicyOptions, refusing the first option that policy does not
// take (the none policy takes none), that gates do not allow, whose value is not a boolean, or
// that nodelet does not implement and is turned on.
func ParseCPUOptions(policy string, options map[string]string, gates CPUOptionGates) (CPUOptions, error) {
	var opts CPUOptions
	if policy == CPUNone && len(options) > 0 {
		return opts, fmt.Errorf("None policy: received unsupported options=%v", options)
	}
	names := make([]string, 0, len(options))
	for name := range options {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if err := checkAvailable(name, gates); err != nil {
			return opts, err
		}
		on, err := strconv.ParseBool(options[name])
		if err != nil {
			return opts, fmt.Errorf("bad value for option %q: %w", name, err)
		}
		switch name {
		case OptionFullPCPUsOnly:
			opts.FullPCPUsOnly = on
		case OptionDistributeCPUsAcrossNUMA:
			opts.DistributeAcrossNUMA = on
		case OptionStrictCPUReservation:
			opts.StrictReservation = on
		default:
			if on { // off, the option does nothing upstream either
				return opts, fmt.Errorf("CPU Manager Policy option %q is not supported by nodelet (it implements %s, %s and %s)",
					name, OptionFullPCPUsOnly, OptionDistributeCPUsAcrossNUMA, OptionStrictCPUReservation)
			}
		}
	}
	return opts, nil
}

// checkAvailable refuses an option upstream does not know, or one whose stage's gate is off,
// with upstream's messages.
func checkAvailable(name string, gates CPUOptionGates) error {
	switch optionMaturity[name] {
	case alpha:
		if !gates.Alpha {
			return fmt.Errorf("CPU Manager Policy Alpha-level Options not enabled, but option %q provided", name)
		}
	case beta:
		if !gates.Beta {
			return fmt.Errorf("CPU Manager Policy Beta-level Options not enabled, but option %q provided", name)
		}
	case ga:
	default:
		return fmt.Errorf("unknown CPU Manager Policy option: %q", name)
	}
	return nil
}
