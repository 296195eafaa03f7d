package app

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/nodelet/nodelet/internal/cm/cmpolicy"
	"github.com/nodelet/nodelet/internal/cm/memorymanager"
	"github.com/nodelet/nodelet/internal/config"
	"github.com/nodelet/nodelet/internal/host/machine"
	"github.com/nodelet/nodelet/internal/host/topology"
	"github.com/nodelet/nodelet/internal/lib/metrics"
	"github.com/nodelet/nodelet/internal/podspec/qos"
)

// newMemoryManager builds the memory manager: None keeps only its state file; Static places
// memory on the NUMA nodes of the machine's topology and checks reservedMemory against node
// allocatable.
func newMemoryManager(cfg *config.Config, host *machine.Machine, topo *topology.Machine) (*memorymanager.Manager, error) {
	kc := cfg.Kubelet
	opts := memorymanager.Options{Policy: kc.MemoryManagerPolicy, StateDir: cfg.RootDir, Reserved: kc.ReservedMemory}
	if opts.Policy == memorymanager.PolicyStatic {
		if host == nil || host.MemoryBytes == 0 {
			return nil, errors.New("memory manager: the machine's memory could not be read")
		}
		capacity := v1.ResourceList{v1.ResourceMemory: *resource.NewQuantity(host.MemoryBytes, resource.BinarySI)}
		opts.Nodes = memorymanager.NodesOf(topo)
		var err error
		if opts.NodeReservation, err = machine.Reservation(capacity, kc.KubeReserved, kc.SystemReserved, kc.EvictionHard); err != nil {
			return nil, err
		}
	}
	m, err := memorymanager.New(opts)
	if err != nil {
		return nil, err
	}
	for _, c := range memorymanager.Collectors() {
		var already prometheus.AlreadyRegisteredError
		if err := metrics.Registry().Register(c); err != nil && !errors.As(err, &already) {
			return nil, err
		}
	}
	return m, nil
}

// resizePinned is upstream's refusal to resize a Guaranteed pod in place while a static
// policy pins its resources, the CPU manager's first, neither when the feature gate
// InPlacePodVerticalScalingExclusiveCPUs is on (exclusive CPUs then stay as they are while the
// limits change, as upstream 1.33).
func (n *agent) resizePinned(pod *v1.Pod) string {
	if qos.Class(pod) != v1.PodQOSGuaranteed || n.cfg.ResizeExclusiveCPUs {
		return ""
	}
	if n.cpus != nil && n.cpus.Policy() == cmpolicy.CPUStatic {
		return "Resize is infeasible for Guaranteed Pods alongside CPU Manager static policy"
	}
	if n.memory != nil && n.memory.Policy() == memorymanager.PolicyStatic {
		return "Resize is infeasible for Guaranteed Pods alongside Memory Manager static policy"
	}
	return ""
}
