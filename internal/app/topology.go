package app

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"

	"k8s.io/klog/v2"
	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"

	"github.com/nodelet/nodelet/internal/cm/topologymanager"
	"github.com/nodelet/nodelet/internal/config"
	"github.com/nodelet/nodelet/internal/host/machine"
	"github.com/nodelet/nodelet/internal/host/topology"
	"github.com/nodelet/nodelet/internal/server/nodeui"
)

// readTopology reads the machine's CPU and NUMA layout once.
func readTopology() (*topology.Machine, error) {
	host := machine.HostPaths() // the machine's memory is read from meminfo when the kernel has no NUMA nodes
	machine, err := topology.Read(host.Sys, filepath.Join(host.Proc, "meminfo"))
	if err != nil {
		return nil, fmt.Errorf("reading the machine's CPU and NUMA topology: %w", err)
	}
	return machine, nil
}

// newTopologyManager builds the topology manager over the machine and the resource managers,
// its hint providers, in upstream's order: devices, CPU, memory.
func newTopologyManager(cfg *config.Config, machine *topology.Machine, providers []topologymanager.HintProvider) (*topologymanager.Manager, error) {
	kc := cfg.Kubelet
	mgr, err := topologymanager.New(machine, topologymanager.Config{
		Policy: kc.TopologyManagerPolicy, Scope: kc.TopologyManagerScope, Options: kc.TopologyManagerPolicyOptions,
	}, providers...)
	if err != nil {
		return nil, fmt.Errorf("topology manager (topologyManagerPolicy %q): %w", kc.TopologyManagerPolicy, err)
	}
	klog.InfoS("Machine topology", "cpus", len(machine.CPUs), "cpusPerCore", machine.CPUsPerCore(), "numaNodes", len(machine.NUMANodes),
		"topologyManagerPolicy", mgr.Policy(), "topologyManagerScope", mgr.Scope())
	return mgr, nil
}

// resourcePolicies are the resource managers' settings the node page lists, named as in the
// configuration.
func resourcePolicies(kc *kubeletconfigv1beta1.KubeletConfiguration) []nodeui.Setting {
	out := []nodeui.Setting{{Name: "cpuManagerPolicy", Value: kc.CPUManagerPolicy}}
	out = appendOptions(out, "cpuManagerPolicyOptions", kc.CPUManagerPolicyOptions)
	out = append(out, nodeui.Setting{Name: "memoryManagerPolicy", Value: kc.MemoryManagerPolicy},
		nodeui.Setting{Name: "topologyManagerPolicy", Value: kc.TopologyManagerPolicy},
		nodeui.Setting{Name: "topologyManagerScope", Value: kc.TopologyManagerScope})
	return appendOptions(out, "topologyManagerPolicyOptions", kc.TopologyManagerPolicyOptions)
}

func appendOptions(out []nodeui.Setting, field string, options map[string]string) []nodeui.Setting {
	for _, name := range slices.Sorted(maps.Keys(options)) {
		out = append(out, nodeui.Setting{Name: field + "." + name, Value: options[name]})
	}
	return out
}
