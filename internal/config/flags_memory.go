package config

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"
)

// addMemoryManagerFlags binds the upstream kubelet's memory manager flags.
func addMemoryManagerFlags(fs *pflag.FlagSet, f *Flags) {
	bindField(f, fs.StringVar, "memory-manager-policy", func(kc *kubeletConfig) *string { return &kc.MemoryManagerPolicy },
		"Where Guaranteed pods' memory goes: None (anywhere), or Static (pinned to the fewest NUMA nodes that hold it; needs --reserved-memory).")
	fs.Var(&reservedMemoryValue{reservations: &f.values.ReservedMemory}, "reserved-memory",
		"Memory kept from pods per NUMA node, for the Static memory manager, e.g. 0:memory=1Gi,hugepages-2Mi=2Gi;1:memory=1Gi (repeatable). "+
			"For each kind the sum must equal kube-reserved + system-reserved + the hard eviction threshold.")
	f.addOverride("reserved-memory", func(kc *kubeletConfig) { kc.ReservedMemory = f.values.ReservedMemory })
}

// reservedMemoryValue parses upstream's --reserved-memory syntax: reservations separated by
// ";", each "<NUMA node>:<kind>=<quantity>[,<kind>=<quantity>…]".
type reservedMemoryValue struct {
	reservations *[]kubeletconfigv1beta1.MemoryReservation
	changed      bool
}

func (r *reservedMemoryValue) Set(s string) error {
	if !r.changed {
		*r.reservations = nil
		r.changed = true
	}
	for _, part := range strings.Split(s, ";") {
		if strings.TrimSpace(part) == "" {
			continue
		}
		node, limits, ok := strings.Cut(part, ":")
		id, err := strconv.ParseInt(strings.TrimSpace(node), 10, 32)
		if !ok || err != nil || id < 0 {
			return fmt.Errorf("malformed reservation %q: want <NUMA node>:<kind>=<quantity>[,…]", part)
		}
		res := kubeletconfigv1beta1.MemoryReservation{NumaNode: int32(id), Limits: corev1.ResourceList{}}
		for _, limit := range strings.Split(limits, ",") {
			name, value, ok := strings.Cut(limit, "=")
			q, err := resource.ParseQuantity(strings.TrimSpace(value))
			if !ok || err != nil {
				return fmt.Errorf("malformed limit %q in %q: want <kind>=<quantity>", limit, part)
			}
			res.Limits[corev1.ResourceName(strings.TrimSpace(name))] = q
		}
		*r.reservations = append(*r.reservations, res)
	}
	return nil
}

func (r *reservedMemoryValue) String() string {
	if r.reservations == nil {
		return ""
	}
	var parts []string
	for _, res := range *r.reservations {
		var limits []string
		for name, q := range res.Limits {
			limits = append(limits, string(name)+"="+q.String())
		}
		slices.Sort(limits)
		parts = append(parts, fmt.Sprintf("%d:%s", res.NumaNode, strings.Join(limits, ",")))
	}
	return strings.Join(parts, ";")
}

func (r *reservedMemoryValue) Type() string { return "reservations" }
