package runtime

import (
	"k8s.io/utils/ptr"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestProcPathsMaskedUnlessPrivilegedOrUnmasked(t *testing.T) {
	pod := newPod("p", ctr("app"))
	sc := containerSecurity(pod, &pod.Spec.Containers[0], seccompPolicy{rootDir: "/root"})
	if !slices.Contains(sc.MaskedPaths, "/proc/kcore") || !slices.Contains(sc.ReadonlyPaths, "/proc/sys") {
		t.Fatalf("default container: masked %v readonly %v", sc.MaskedPaths, sc.ReadonlyPaths)
	}
	unmasked := v1.UnmaskedProcMount
	for name, csc := range map[string]*v1.SecurityContext{
		"privileged": {Privileged: ptr.To(true)},
		"unmasked":   {ProcMount: &unmasked},
	} {
		pod.Spec.Containers[0].SecurityContext = csc
		sc := containerSecurity(pod, &pod.Spec.Containers[0], seccompPolicy{rootDir: "/root"})
		if sc.MaskedPaths == nil || len(sc.MaskedPaths) != 0 || sc.ReadonlyPaths == nil || len(sc.ReadonlyPaths) != 0 {
			t.Errorf("%s: masked %v readonly %v, want empty non-nil lists", name, sc.MaskedPaths, sc.ReadonlyPaths)
		}
	}
}

func TestSeccompAndAppArmorProfiles(t *testing.T) {
	pod := newPod("p", ctr("app"), ctr("other"))
	local := "profiles/audit.json"
	pod.Spec.SecurityContext = &v1.PodSecurityContext{SeccompProfile: &v1.SeccompProfile{Type: v1.SeccompProfileTypeRuntimeDefault}}
	pod.Spec.Containers[0].SecurityContext = &v1.SecurityContext{SeccompProfile: &v1.SeccompProfile{Type: v1.SeccompProfileTypeLocalhost, LocalhostProfile: &local}}
	pod.Annotations[v1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix+"other"] = "localhost/my-profile"

	app := containerSecurity(pod, &pod.Spec.Containers[0], seccompPolicy{rootDir: "/var/lib/kubelet"})
	if app.Seccomp.ProfileType != runtimeapi.SecurityProfile_Localhost || app.Seccomp.LocalhostRef != "/var/lib/kubelet/seccomp/profiles/audit.json" {
		t.Errorf("container seccomp = %+v, want the localhost profile under the root dir", app.Seccomp)
	}
	if app.Apparmor != nil {
		t.Errorf("app apparmor = %+v, want the runtime's default (nil)", app.Apparmor)
	}
	other := containerSecurity(pod, &pod.Spec.Containers[1], seccompPolicy{rootDir: "/var/lib/kubelet"})
	if other.Seccomp.ProfileType != runtimeapi.SecurityProfile_RuntimeDefault {
		t.Errorf("pod-level seccomp not inherited: %+v", other.Seccomp)
	}
	if other.Apparmor == nil || other.Apparmor.ProfileType != runtimeapi.SecurityProfile_Localhost || other.Apparmor.LocalhostRef != "my-profile" {
		t.Errorf("annotation apparmor = %+v", other.Apparmor)
	}
	pod.Spec.SecurityContext = nil
	if sc := containerSecurity(pod, &pod.Spec.Containers[1], seccompPolicy{rootDir: "/r"}); sc.Seccomp.ProfileType != runtimeapi.SecurityProfile_Unconfined {
		t.Errorf("no profile anywhere: seccomp %+v, want unconfined", sc.Seccomp)
	}
}

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
	cfg, err := e.mgr.sandboxConfig(pod, 0)
	if err != nil || cfg.Hostname != "web.sub.default.svc."+e.mgr.dns.clusterDomain {
		t.Fatalf("hostname %q, %v; want the pod's FQDN", cfg.GetHostname(), err)
	}
	pod.Spec.Hostname = strings.Repeat("a", 50)
	if _, err := e.mgr.sandboxConfig(pod, 0); err == nil || !strings.Contains(err.Error(), "too long") {
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
