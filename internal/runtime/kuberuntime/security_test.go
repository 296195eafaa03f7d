package kuberuntime

import (
	"context"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"k8s.io/utils/ptr"
)

func TestRunAsNonRootRefusesRootImagesAndUsers(t *testing.T) {
	e := newTestEnv(t)
	rootImage, userImage, namedImage := "example/root:1", "example/user:1", "example/named:1"
	e.fake.SetImageUser(rootImage, nil, "")
	e.fake.SetImageUser(userImage, ptr.To[int64](1234), "")
	e.fake.SetImageUser(namedImage, nil, "nobody")
	cases := []struct {
		name, image string
		runAsUser   *int64
		wantErr     string
	}{
		{"root-image", rootImage, nil, "image will run as root"},
		{"explicit-root", userImage, ptr.To[int64](0), "runAsUser breaks non-root policy"},
		{"named-user", namedImage, nil, "non-numeric user (nobody)"},
		{"image-uid", userImage, nil, ""},
		{"explicit-uid", rootImage, ptr.To[int64](1000), ""},
	}
	for _, tc := range cases {
		c := ctr("app", "sleep", "60")
		c.Image = tc.image
		c.SecurityContext = &v1.SecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: tc.runAsUser}
		pod := newPod(tc.name, c)
		res := e.sync(pod)
		w, waiting := res.Waiting["app"]
		switch {
		case tc.wantErr == "" && waiting:
			t.Errorf("%s: refused: %+v", tc.name, w)
		case tc.wantErr != "" && (!waiting || w.Reason != ReasonCreateContainerConfigError || !strings.Contains(w.Message, tc.wantErr)):
			t.Errorf("%s: waiting %+v, want %s containing %q", tc.name, w, ReasonCreateContainerConfigError, tc.wantErr)
		}
	}
}

func TestSetHostnameAsFQDN(t *testing.T) {
	e := newTestEnv(t)
	pod := newPod("web", ctr("app"))
	yes := true
	pod.Spec.Subdomain, pod.Spec.SetHostnameAsFQDN = "sub", &yes
	cfg, err := e.mgr.sandboxConfig(context.Background(), pod, 0)
	if err != nil || cfg.Hostname != "web.sub.default.svc."+e.mgr.dns.ClusterDomain() {
		t.Fatalf("hostname %q, %v; want the pod's FQDN", cfg.GetHostname(), err)
	}
	pod.Spec.Hostname = strings.Repeat("a", 50)
	if _, err := e.mgr.sandboxConfig(context.Background(), pod, 0); err == nil || !strings.Contains(err.Error(), "too long") {
		t.Fatalf("over-long FQDN: err %v, want too long", err)
	}
}

// seccompDefault: a pod that names no profile runs its sandbox and containers under the
// runtime's default profile; one that asks for Unconfined keeps it.
func TestSeccompDefaultReachesTheRuntime(t *testing.T) {
	e := newTestEnv(t, func(o *Options) { o.SeccompDefault = true })
	unconfined := ctr("loose")
	unconfined.SecurityContext = &v1.SecurityContext{SeccompProfile: &v1.SeccompProfile{Type: v1.SeccompProfileTypeUnconfined}}
	pod := newPod("sd", ctr("app"), unconfined)
	e.sync(pod)
	sandboxes := e.fake.Sandboxes()
	if len(sandboxes) != 1 {
		t.Fatalf("%d sandboxes", len(sandboxes))
	}
	if p := sandboxes[0].Config.Linux.SecurityContext.Seccomp; p.GetProfileType() != runtimeapi.SecurityProfile_RuntimeDefault {
		t.Errorf("sandbox seccomp %v, want RuntimeDefault", p)
	}
	for name, want := range map[string]runtimeapi.SecurityProfile_ProfileType{
		"app": runtimeapi.SecurityProfile_RuntimeDefault, "loose": runtimeapi.SecurityProfile_Unconfined,
	} {
		c := e.running(name)
		if got := c.Config.Linux.SecurityContext.Seccomp.GetProfileType(); got != want {
			t.Errorf("%s: seccomp %v, want %v", name, got, want)
		}
	}

	off := newTestEnv(t)
	off.sync(newPod("plain", ctr("app")))
	if got := off.running("app").Config.Linux.SecurityContext.Seccomp.GetProfileType(); got != runtimeapi.SecurityProfile_Unconfined {
		t.Errorf("seccompDefault off: seccomp %v, want Unconfined", got)
	}
}

// cpuCFSQuota: false keeps the CPU weight but sets no quota.
func TestNoCPUQuotaLeavesLimitsToShares(t *testing.T) {
	e := newTestEnv(t, func(o *Options) { o.NoCPUQuota = true })
	c := ctr("app")
	c.Resources = v1.ResourceRequirements{
		Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("500m")},
		Limits:   v1.ResourceList{v1.ResourceCPU: resource.MustParse("500m")},
	}
	e.sync(newPod("nq", c))
	res := e.running("app").Config.Linux.Resources
	if res.CpuQuota != 0 || res.CpuPeriod != 0 || res.CpuShares != 512 {
		t.Errorf("resources quota %d period %d shares %d, want no quota and 512 shares", res.CpuQuota, res.CpuPeriod, res.CpuShares)
	}
}
