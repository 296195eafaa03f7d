package runtime

import (
	"errors"
	"testing"

	v1 "k8s.io/api/core/v1"
)

func TestSandboxGetsThePodCgroupAsParent(t *testing.T) {
	var asked []string
	e := newTestEnv(t, func(o *Options) {
		o.PodCgroup = func(pod *v1.Pod) (string, error) {
			asked = append(asked, string(pod.UID))
			return "/kubepods/burstable/pod" + string(pod.UID), nil
		}
	})
	pod := newPod("cg", ctr("app"))
	cfg, err := e.mgr.sandboxConfig(pod, 0)
	if err != nil {
		t.Fatal(err)
	}
	if want := "/kubepods/burstable/pod" + string(pod.UID); cfg.Linux.CgroupParent != want {
		t.Errorf("cgroup parent %q, want %q", cfg.Linux.CgroupParent, want)
	}
	if len(asked) != 1 || asked[0] != string(pod.UID) {
		t.Errorf("PodCgroup calls %v", asked)
	}
}

func TestPodCgroupFailureFailsTheSandbox(t *testing.T) {
	e := newTestEnv(t, func(o *Options) {
		o.PodCgroup = func(*v1.Pod) (string, error) { return "", errors.New("read-only file system") }
	})
	pod := newPod("cg", ctr("app"))
	res := e.sync(pod)
	if res.Err == nil {
		t.Fatal("SyncPod succeeded without a pod cgroup")
	}
	if n := len(e.fake.Sandboxes()); n != 0 {
		t.Errorf("%d sandboxes created", n)
	}
}

func TestNoPodCgroupHookLeavesTheParentEmpty(t *testing.T) {
	e := newTestEnv(t)
	cfg, err := e.mgr.sandboxConfig(newPod("cg", ctr("app")), 0)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Linux.CgroupParent != "" {
		t.Errorf("cgroup parent %q", cfg.Linux.CgroupParent)
	}
}
