package containeropts

import (
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"
)

func TestProcPathsMaskedUnlessPrivilegedOrUnmasked(t *testing.T) {
	pod := newPod("p", ctr("app"))
	sc := ContainerSecurity(pod, &pod.Spec.Containers[0], Seccomp{RootDir: "/root"})
	if !slices.Contains(sc.MaskedPaths, "/proc/kcore") || !slices.Contains(sc.ReadonlyPaths, "/proc/sys") {
		t.Fatalf("default container: masked %v readonly %v", sc.MaskedPaths, sc.ReadonlyPaths)
	}
	unmasked := v1.UnmaskedProcMount
	for name, csc := range map[string]*v1.SecurityContext{
		"privileged": {Privileged: ptr.To(true)},
		"unmasked":   {ProcMount: &unmasked},
	} {
		pod.Spec.Containers[0].SecurityContext = csc
		sc := ContainerSecurity(pod, &pod.Spec.Containers[0], Seccomp{RootDir: "/root"})
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

	app := ContainerSecurity(pod, &pod.Spec.Containers[0], Seccomp{RootDir: "/var/lib/kubelet"})
	if app.Seccomp.ProfileType != runtimeapi.SecurityProfile_Localhost || app.Seccomp.LocalhostRef != "/var/lib/kubelet/seccomp/profiles/audit.json" {
		t.Errorf("container seccomp = %+v, want the localhost profile under the root dir", app.Seccomp)
	}
	if app.Apparmor != nil {
		t.Errorf("app apparmor = %+v, want the runtime's default (nil)", app.Apparmor)
	}
	other := ContainerSecurity(pod, &pod.Spec.Containers[1], Seccomp{RootDir: "/var/lib/kubelet"})
	if other.Seccomp.ProfileType != runtimeapi.SecurityProfile_RuntimeDefault {
		t.Errorf("pod-level seccomp not inherited: %+v", other.Seccomp)
	}
	if other.Apparmor == nil || other.Apparmor.ProfileType != runtimeapi.SecurityProfile_Localhost || other.Apparmor.LocalhostRef != "my-profile" {
		t.Errorf("annotation apparmor = %+v", other.Apparmor)
	}
	pod.Spec.SecurityContext = nil
	if sc := ContainerSecurity(pod, &pod.Spec.Containers[1], Seccomp{RootDir: "/r"}); sc.Seccomp.ProfileType != runtimeapi.SecurityProfile_Unconfined {
		t.Errorf("no profile anywhere: seccomp %+v, want unconfined", sc.Seccomp)
	}
}

// newPod is a pod of containers with the annotations map AppArmor's legacy keys go into.
func newPod(name string, containers ...v1.Container) *v1.Pod {
	meta := metav1.ObjectMeta{Name: name, Namespace: "default", Annotations: map[string]string{}}
	return &v1.Pod{ObjectMeta: meta, Spec: v1.PodSpec{Containers: containers}}
}

func ctr(name string) v1.Container { return v1.Container{Name: name, Image: "busybox"} }
