package cm

import (
	"strings"
	"testing"
)

func TestNoPodCgroupsWhenDisabled(t *testing.T) {
	m, err := newPodCgroups(Config{CgroupsPerQOS: false, CgroupDriver: "cgroupfs"})
	if err != nil || m != nil {
		t.Errorf("manager %v, err %v; want neither", m, err)
	}
}

func TestSystemdDriverWithoutSystemdIsRefused(t *testing.T) {
	if isDir("/run/systemd/system") {
		t.Skip("this host runs systemd: the driver would make real slices")
	}
	m, err := newPodCgroups(Config{CgroupsPerQOS: true, CgroupDriver: "systemd", CPUCFSQuota: true})
	if err == nil || !strings.Contains(err.Error(), "D-Bus") {
		t.Errorf("manager %v, err %v; want a D-Bus connection error", m, err)
	}
}
