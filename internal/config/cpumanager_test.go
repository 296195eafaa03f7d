package config

import (
	"strings"
	"testing"
)

func TestValidateCPUManager(t *testing.T) {
	for _, tt := range []struct {
		name   string
		mutate func(*kc)
		want   string // "" for valid
	}{
		{"static with implemented options", func(c *kc) {
			c.CPUManagerPolicy = "static"
			c.CPUManagerPolicyOptions = map[string]string{"full-pcpus-only": "true", "distribute-cpus-across-numa": "true"}
		}, ""},
		{"unknown policy", func(c *kc) { c.CPUManagerPolicy = "dynamic" }, "cpuManagerPolicy: must be one of"},
		{"option nodelet lacks", func(c *kc) {
			c.CPUManagerPolicy = "static"
			c.FeatureGates = map[string]bool{"CPUManagerPolicyAlphaOptions": true}
			c.CPUManagerPolicyOptions = map[string]string{"align-by-socket": "true"}
		}, `cpuManagerPolicyOptions: CPU Manager Policy option "align-by-socket" is not supported by nodelet`},
		{"alpha option, alpha gate at its default", func(c *kc) {
			c.CPUManagerPolicy = "static"
			c.CPUManagerPolicyOptions = map[string]string{"distribute-cpus-across-cores": "true"}
		}, `cpuManagerPolicyOptions: CPU Manager Policy Alpha-level Options not enabled, but option "distribute-cpus-across-cores" provided`},
		{"beta option, beta gate at its default", func(c *kc) {
			c.CPUManagerPolicy = "static"
			c.CPUManagerPolicyOptions = map[string]string{"strict-cpu-reservation": "true"}
		}, ""},
		{"beta option, beta gate off", func(c *kc) {
			c.CPUManagerPolicy = "static"
			c.FeatureGates = map[string]bool{"CPUManagerPolicyBetaOptions": false, "CPUManagerPolicyAlphaOptions": false}
			c.CPUManagerPolicyOptions = map[string]string{"distribute-cpus-across-numa": "true"}
		}, `cpuManagerPolicyOptions: CPU Manager Policy Beta-level Options not enabled, but option "distribute-cpus-across-numa" provided`},
		{"GA option, both gates off", func(c *kc) {
			c.CPUManagerPolicy = "static"
			c.FeatureGates = map[string]bool{"CPUManagerPolicyBetaOptions": false, "CPUManagerPolicyAlphaOptions": false}
			c.CPUManagerPolicyOptions = map[string]string{"full-pcpus-only": "true"}
		}, ""},
		{"options with none", func(c *kc) { c.CPUManagerPolicyOptions = map[string]string{"full-pcpus-only": "true"} }, "None policy: received unsupported options"},
		{"bad reserved CPUs", func(c *kc) { c.ReservedSystemCPUs = "0-x" }, "reservedSystemCPUs: unable to parse"},
		{"reserved CPUs with a reserved cgroup", func(c *kc) {
			c.ReservedSystemCPUs = "0"
			c.SystemReservedCgroup = "/system.slice"
		}, "can't use reservedSystemCPUs (--reserved-cpus) with systemReservedCgroup"},
		{"static without a reconcile period", func(c *kc) {
			c.CPUManagerPolicy = "static"
			c.CPUManagerReconcilePeriod.Duration = 0
		}, "cpuManagerReconcilePeriod: must be > 0"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := defaulted()
			tt.mutate(c)
			err := Validate(c)
			if (tt.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.want)) {
				t.Errorf("err = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestReservedSystemCPUsBecomeTheCPUReservation(t *testing.T) {
	c := defaulted()
	c.ReservedSystemCPUs = "0,2"
	c.KubeReserved = map[string]string{"cpu": "500m", "memory": "1Gi"}
	c.SystemReserved = map[string]string{"cpu": "100m"}
	applyReservedSystemCPUs(c)
	if c.SystemReserved["cpu"] != "2" {
		t.Errorf("systemReserved cpu %q, want 2", c.SystemReserved["cpu"])
	}
	if _, ok := c.KubeReserved["cpu"]; ok || c.KubeReserved["memory"] != "1Gi" {
		t.Errorf("kubeReserved %v, want memory only", c.KubeReserved)
	}
}

// The suite's CPU manager specs set these gates to either value; nodelet takes each and the
// value reaches its settings.
func TestCPUManagerGatesAreAcceptedInBothValues(t *testing.T) {
	for _, on := range []bool{true, false} {
		c := defaulted()
		c.FeatureGates = map[string]bool{
			"CPUManagerPolicyAlphaOptions": on, "CPUManagerPolicyBetaOptions": on,
			"DisableCPUQuotaWithExclusiveCPUs": on, "InPlacePodVerticalScalingExclusiveCPUs": on,
		}
		if err := Validate(c); err != nil {
			t.Fatalf("gates %v refused: %v", on, err)
		}
		s := settingsOf(c)
		if s.CPUManagerOptionGates.Alpha != on || s.CPUManagerOptionGates.Beta != on || s.DisableCPUQuotaWithExclusiveCPUs != on || s.ResizeExclusiveCPUs != on {
			t.Errorf("gates %v: settings %+v", on, s)
		}
	}
	s := settingsOf(defaulted())
	if s.CPUManagerOptionGates.Alpha || !s.CPUManagerOptionGates.Beta || !s.DisableCPUQuotaWithExclusiveCPUs || s.ResizeExclusiveCPUs {
		t.Errorf("defaults: %+v; want upstream 1.33's (alpha off, beta on, quota off for exclusive CPUs on, resize off)", s)
	}
}
