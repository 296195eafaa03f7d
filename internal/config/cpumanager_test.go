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
			c.CPUManagerPolicyOptions = map[string]string{"strict-cpu-reservation": "true"}
		}, `cpuManagerPolicyOptions: CPU Manager Policy option "strict-cpu-reservation" is not supported by nodelet`},
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
