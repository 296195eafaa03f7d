package app

import (
	"fmt"
	"net"
	"slices"
	"testing"

	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"

	"github.com/nodelet/nodelet/internal/host/topology"
	"github.com/nodelet/nodelet/internal/server/nodeui"
	"github.com/nodelet/nodelet/internal/testutil"
)

// A topology manager policy is accepted and, with no resource manager to align yet, admits pods;
// the node page shows this machine's topology, read from /sys, and the policy.
func TestTopologyManagerPolicyRunsPods(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	fake, dir := startNode(t, "--topology-manager-policy=single-numa-node", "--topology-manager-scope=pod",
		"--topology-manager-policy-options=prefer-closest-numa-nodes=true", fmt.Sprintf("--node-ui-port=%d", port))
	writePod(t, dir, "web", "Always")
	testutil.Eventually(t, "web running", func() bool { return running(fake, "web") != nil })

	machine, err := topology.Read("/sys", "/proc/meminfo") // what nodelet read
	if err != nil {
		t.Fatal(err)
	}
	var node struct {
		Topology struct {
			CPUs      int
			NUMANodes []struct{ CPUs string }
			Policies  []nodeui.Setting
		}
	}
	if err := getJSON(fmt.Sprintf("http://127.0.0.1:%d/ui/api/node", port), &node); err != nil {
		t.Fatal(err)
	}
	got := node.Topology
	if got.CPUs != len(machine.CPUs) || got.CPUs == 0 || len(got.NUMANodes) != len(machine.NUMANodes) || got.NUMANodes[0].CPUs == "" ||
		!slices.Contains(got.Policies, nodeui.Setting{Name: "topologyManagerPolicy", Value: "single-numa-node"}) {
		t.Errorf("node page topology %+v, machine %d CPUs on %d NUMA nodes", got, len(machine.CPUs), len(machine.NUMANodes))
	}
}

func TestNewTopologyRefusesABadOption(t *testing.T) {
	cfg, _, _ := testConfig(t, "--topology-manager-policy=restricted")
	cfg.Kubelet.TopologyManagerPolicyOptions = map[string]string{"max-allowable-numa-nodes": "4"}
	machine, err := readTopology()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := newTopologyManager(cfg, machine, nil); err == nil {
		t.Error("max-allowable-numa-nodes=4 accepted")
	}
}

func TestResourcePolicies(t *testing.T) {
	kc := &kubeletconfigv1beta1.KubeletConfiguration{CPUManagerPolicy: "none", MemoryManagerPolicy: "None",
		TopologyManagerPolicy: "restricted", TopologyManagerScope: "pod",
		TopologyManagerPolicyOptions: map[string]string{"prefer-closest-numa-nodes": "true", "max-allowable-numa-nodes": "8"}}
	want := []nodeui.Setting{{Name: "cpuManagerPolicy", Value: "none"}, {Name: "memoryManagerPolicy", Value: "None"},
		{Name: "topologyManagerPolicy", Value: "restricted"}, {Name: "topologyManagerScope", Value: "pod"},
		{Name: "topologyManagerPolicyOptions.max-allowable-numa-nodes", Value: "8"},
		{Name: "topologyManagerPolicyOptions.prefer-closest-numa-nodes", Value: "true"}}
	if got := resourcePolicies(kc); !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}
