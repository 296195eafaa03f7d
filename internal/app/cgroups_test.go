package app

import (
	"testing"

	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"

	"github.com/nodelet/nodelet/internal/config"
)

func TestNoPodCgroupsWhenDisabledOrSystemd(t *testing.T) {
	for name, cfg := range map[string]*config.Config{
		"cgroupsPerQOS=false": {Kubelet: &kubeletconfigv1beta1.KubeletConfiguration{CgroupDriver: "cgroupfs"}},
		"systemd driver": {Kubelet: &kubeletconfigv1beta1.KubeletConfiguration{CgroupDriver: "systemd"},
			Settings: config.Settings{CgroupsPerQOS: true}},
	} {
		m, err := newPodCgroups(cfg)
		if err != nil || m != nil {
			t.Errorf("%s: manager %v, err %v; want neither", name, m, err)
		}
	}
}
