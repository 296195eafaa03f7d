package app

import (
	"slices"
	"testing"

	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"

	"github.com/nodelet/nodelet/internal/nodeui"
	"github.com/nodelet/nodelet/internal/testutil"
)

// A topology manager policy is accepted and, with no resource manager to align yet, admits pods.
func TestTopologyManagerPolicyRunsPods(t *testing.T) {
	fake, dir := startNode(t, "--topology-manager-policy=single-numa-node", "--topology-manager-scope=pod",
		"--topology-manager-policy-options=prefer-closest-numa-nodes=true")
	writePod(t, dir, "web", "Always")
	testutil.Eventually(t, "web running", func() bool { return running(fake, "web") != nil })
}

func TestNewTopologyRefusesABadOption(t *testing.T) {
	cfg, _, _ := testConfig(t, "--topology-manager-policy=restricted")
	cfg.Kubelet.TopologyManagerPolicyOptions = map[string]string{"max-allowable-numa-nodes": "4"}
	if _, _, err := newTopology(cfg); err == nil {
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
