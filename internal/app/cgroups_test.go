package app

import (
	"testing"

	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"
)

func TestNoPodCgroupsWhenDisabledOrSystemd(t *testing.T) {
	no := false
	for name, kc := range map[string]*kubeletconfigv1beta1.KubeletConfiguration{
		"cgroupsPerQOS=false": {CgroupsPerQOS: &no, CgroupDriver: "cgroupfs"},
		"systemd driver":      {CgroupDriver: "systemd"},
	} {
		m, err := newPodCgroups(kc)
		if err != nil || m != nil {
			t.Errorf("%s: manager %v, err %v; want neither", name, m, err)
		}
	}
}
