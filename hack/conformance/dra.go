package main

import (
	"bufio"
	"fmt"
)

// The DRA selection (hack/conformance/dra.txt): the upstream node suite's specs of Dynamic
// Resource Allocation on the node, both kubelets with the DynamicResourceAllocation gate on.

const draTitle = "\n# DRA selection: Dynamic Resource Allocation on the node\n\n"

// writeDRA is the DRA selection: what it runs and how, then the columns in the shape of the
// parallel selection.
func (rp *report) writeDRA(w *bufio.Writer) {
	fmt.Fprint(w, draTitle)
	fmt.Fprintf(w, "The upstream node suite's own specs of Dynamic Resource Allocation (`[Feature:DynamicResourceAllocation]`, "+
		"test/e2e_node/dra_test.go; beta and off by default in 1.33): both kubelets run with the `DynamicResourceAllocation` "+
		"feature gate on in their configuration file, the control plane with DRA on. Every spec is `Serial`; they run one at a "+
		"time (focus below, from hack/conformance/dra.txt, label filter `!Flaky`) and restart the kubelet through "+
		"hack/conformance/shim/systemctl, both kubelets alike. The specs start upstream's DRA test driver inside the suite's "+
		"own process as the node plugin (registration in /var/lib/kubelet/plugins_registry, its socket in "+
		"/var/lib/kubelet/plugins, both kubelets run with that root directory), set their claims' allocation themselves and "+
		"make the driver fail, hang or succeed on command; the driver writes CDI specs to /var/run/cdi, which the run links to "+
		"the project containerd's `cdi_spec_dirs`. `make conformance-dra` runs it against nodelet and the %s.\n\n", upstreamName)
	rp.dra.writeBody(w, "hack/conformance/results/dra", "make conformance-dra")
}
