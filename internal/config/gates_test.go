package config

import (
	"maps"
	"strings"
	"testing"
)

// Every gate the upstream kubelet 1.33 knows starts nodelet at its default value.
func TestEveryUpstreamGateIsAcceptedAtItsDefault(t *testing.T) {
	if len(upstreamGates) < 150 {
		t.Fatalf("only %d upstream gates in the generated table", len(upstreamGates))
	}
	c := defaulted()
	c.FeatureGates = map[string]bool{}
	for name, g := range upstreamGates {
		c.FeatureGates[name] = g.Default
	}
	if err := Validate(c); err != nil {
		t.Fatalf("every gate at its default: %v", err)
	}
}

// A gate nodelet acts on is one the upstream kubelet knows, spelled as upstream spells it: a
// misspelt name would be refused as unknown when set, and read as off when not.
func TestGatesActedOnAreUpstreamGates(t *testing.T) {
	for name := range gatesActedOn {
		if _, known := upstreamGates[name]; !known {
			t.Errorf("gate %q is acted on but the upstream kubelet %s has no gate of that name", name, upstreamVersion)
		}
	}
}

func TestFeatureGateValues(t *testing.T) {
	for _, tc := range []struct {
		gates map[string]bool
		want  string // "" accepted, else in the error
	}{
		// Refused before at their (upstream default) value.
		{map[string]bool{"InPlacePodVerticalScaling": true, "SidecarContainers": true, "RotateKubeletServerCertificate": true}, ""},
		// Acted on at the other value.
		{map[string]bool{"KubeletPodResourcesGet": true, "UserNamespacesSupport": false, "PodAndContainerStatsFromCRI": true}, ""},
		{map[string]bool{"ContainerStopSignals": true}, ""},
		{map[string]bool{"NoSuchGate": true}, `featureGates["NoSuchGate"]: unrecognized feature gate: NoSuchGate`},
		{map[string]bool{"SidecarContainers": false}, "cannot set feature gate SidecarContainers to false, feature is locked to true"},
		{map[string]bool{"MemoryQoS": true}, `featureGates["MemoryQoS"]: is not supported by nodelet at true: nodelet implements only this alpha gate's default (false) behaviour`},
		{map[string]bool{"AllAlpha": true}, `featureGates["AllAlpha"]`},
		{map[string]bool{"InPlacePodVerticalScaling": false}, `featureGates["InPlacePodVerticalScaling"]: is not supported by nodelet at false`},
	} {
		c := defaulted()
		c.FeatureGates = tc.gates
		err := Validate(c)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%v: %v", tc.gates, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%v: error %v, want it to contain %q", tc.gates, err, tc.want)
		}
	}
}

// --feature-gates wins gate by gate over featureGates; a gate only the file sets stays.
func TestFeatureGatesFlagMergesOverTheFile(t *testing.T) {
	path := writeConfig(t, "kubelet.yaml", header+
		"featureGates: {KubeletPodResourcesGet: false, UserNamespacesSupport: false}\n")
	cfg := mustComplete(t, "--config="+path, "--feature-gates=KubeletPodResourcesGet=true, InPlacePodVerticalScaling=true", "--feature-gates=SidecarContainers=true")
	want := map[string]bool{"KubeletPodResourcesGet": true, "UserNamespacesSupport": false, "InPlacePodVerticalScaling": true, "SidecarContainers": true}
	if !maps.Equal(cfg.Kubelet.FeatureGates, want) {
		t.Errorf("featureGates = %v, want %v", cfg.Kubelet.FeatureGates, want)
	}
	if !cfg.PodResourcesGet || cfg.UserNamespacesSupport {
		t.Errorf("PodResourcesGet = %v, UserNamespacesSupport = %v: the merged gates are not acted on", cfg.PodResourcesGet, cfg.UserNamespacesSupport)
	}
	if _, err := complete(t, "--feature-gates=NoSuchGate=true"); err == nil || !strings.Contains(err.Error(), "unrecognized feature gate: NoSuchGate") {
		t.Errorf("unknown gate on the command line: %v", err)
	}
}

func TestFeatureGatesFlagSyntax(t *testing.T) {
	for value, want := range map[string]string{
		"A":       "missing bool value for A",
		"A=maybe": "invalid value of A=maybe",
	} {
		gates := map[string]bool{}
		if err := (&gatesValue{gates: &gates}).Set(value); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Set(%q) = %v, want %q", value, err, want)
		}
	}
}
