package cm

import "testing"

func TestNoPodCgroupsWhenDisabledOrSystemd(t *testing.T) {
	for name, cfg := range map[string]Config{
		"cgroupsPerQOS=false": {CgroupsPerQOS: false, CgroupDriver: "cgroupfs"},
		"systemd driver":      {CgroupsPerQOS: true, CgroupDriver: "systemd"},
	} {
		m, err := newPodCgroups(cfg)
		if err != nil || m != nil {
			t.Errorf("%s: manager %v, err %v; want neither", name, m, err)
		}
	}
}
