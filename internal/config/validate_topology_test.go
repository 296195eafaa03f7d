package config

import (
	"strings"
	"testing"
)

func TestValidateTopologyManager(t *testing.T) {
	for _, policy := range []string{"none", "best-effort", "restricted", "single-numa-node"} {
		for _, scope := range []string{"container", "pod"} {
			c := defaulted()
			c.TopologyManagerPolicy, c.TopologyManagerScope = policy, scope
			c.TopologyManagerPolicyOptions = map[string]string{"prefer-closest-numa-nodes": "true", "max-allowable-numa-nodes": "8"}
			if err := Validate(c); err != nil {
				t.Errorf("policy %s, scope %s refused: %v", policy, scope, err)
			}
		}
	}
	for option, want := range map[string]string{
		"align-by-socket":           `unknown Topology Manager Policy option: "align-by-socket"`,
		"prefer-closest-numa-nodes": `bad value for option "prefer-closest-numa-nodes"`,
		"max-allowable-numa-nodes":  `unable to convert policy option to integer "max-allowable-numa-nodes"`,
	} {
		c := defaulted()
		c.TopologyManagerPolicy = "restricted"
		c.TopologyManagerPolicyOptions = map[string]string{option: "some"}
		err := Validate(c)
		if err == nil || !strings.Contains(err.Error(), "invalid configuration: topologyManagerPolicyOptions: "+want) {
			t.Errorf("option %s: %v, want %q", option, err, want)
		}
	}
	c := defaulted()
	c.TopologyManagerPolicy = "strict"
	if err := Validate(c); err == nil || !strings.Contains(err.Error(), "topologyManagerPolicy: ") {
		t.Errorf("policy strict: %v", err)
	}
}
