package cm

import (
	"strings"
	"testing"
)

func TestNoPodCgroupsWhenDisabled(t *testing.T) {
	m, err := newPodCgroups(t.Context(), Config{CgroupsPerQOS: false, CgroupDriver: "cgroupfs"})
	if err != nil || m != nil {
		t.Errorf("manager %v, err %v; want neither", m, err)
	}
}

func TestSystemdDriverWithoutSystemdIsRefused(t *testing.T) {
	if isDir("/run/systemd/system") {
		t.Skip("this host runs systemd: the driver would make real slices")
	}
	m, err := newPodCgroups(t.Context(), Config{CgroupsPerQOS: true, CgroupDriver: "systemd", CPUCFSQuota: true})
	if err == nil || !strings.Contains(err.Error(), "D-Bus") {
		t.Errorf("manager %v, err %v; want a D-Bus connection error", m, err)
	}
}

// Kernel memcg threshold notification needs v1's cgroup.event_control: on v2 it is refused,
// with the reason, as upstream refuses it.
func TestMemoryCgroupsOnlyOnV1(t *testing.T) {
	v1Tree := newFakeV1(t)
	m := &ContainerManager{pods: startManager(t, v1Tree, Options{})}
	root, pods, err := m.MemoryCgroups()
	if err != nil || root != v1Tree.root+"/memory" || pods != v1Tree.root+"/memory/kubepods" {
		t.Errorf("v1: %q %q %v", root, pods, err)
	}
	m = &ContainerManager{pods: startManager(t, newFakeV2(t), Options{})}
	if _, _, err := m.MemoryCgroups(); err == nil || !strings.Contains(err.Error(), "cgroup.event_control") {
		t.Errorf("v2: %v, want a refusal naming cgroup.event_control", err)
	}
	if _, _, err := (&ContainerManager{}).MemoryCgroups(); err == nil {
		t.Error("without pod cgroups: no error")
	}
}
