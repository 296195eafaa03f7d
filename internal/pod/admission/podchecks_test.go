package admission

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"

	"github.com/nodelet/nodelet/internal/host/sysctl"
	"github.com/nodelet/nodelet/internal/pod/podfields"
	"github.com/nodelet/nodelet/internal/pod/status"
	"github.com/nodelet/nodelet/internal/runtime/runtimefeatures"
)

func TestCheckOS(t *testing.T) {
	pod := &v1.Pod{}
	if ok, _, _ := checkOS(pod); !ok {
		t.Fatal("pod without an OS refused")
	}
	pod.Spec.OS = &v1.PodOS{Name: "windows"}
	if ok, reason, _ := checkOS(pod); ok || reason != ReasonPodOSNotSupported {
		t.Fatalf("windows pod: ok=%v reason=%q", ok, reason)
	}
	pod.Spec.OS = &v1.PodOS{Name: "linux"}
	pod.Spec.NodeSelector = map[string]string{v1.LabelOSStable: "windows"}
	if ok, _, _ := checkOS(pod); !ok {
		t.Fatal("a nodeSelector on the OS is the scheduler predicates' to refuse, not the OS check's")
	}
	pod.Labels = map[string]string{v1.LabelOSStable: "windows"}
	if ok, reason, msg := checkOS(pod); ok || reason != ReasonPodOSSelectorMismatch || !strings.Contains(msg, "`kubernetes.io/os` label") {
		t.Fatalf("windows label: ok=%v reason=%q message=%q", ok, reason, msg)
	}
	pod.Labels[v1.LabelOSStable] = "linux"
	if ok, _, _ := checkOS(pod); !ok {
		t.Fatal("linux label refused")
	}
}

func TestCheckSysctls(t *testing.T) {
	withSysctls := func(hostNet bool, names ...string) *v1.Pod {
		pod := &v1.Pod{Spec: v1.PodSpec{HostNetwork: hostNet, SecurityContext: &v1.PodSecurityContext{}}}
		for _, n := range names {
			pod.Spec.SecurityContext.Sysctls = append(pod.Spec.SecurityContext.Sysctls, v1.Sysctl{Name: n, Value: "1"})
		}
		return pod
	}
	cases := []struct {
		name    string
		pod     *v1.Pod
		allowed []string
		ok      bool
	}{
		{"safe", withSysctls(false, "kernel.shm_rmid_forced", "net.ipv4.tcp_syncookies"), nil, true},
		{"safe with slashes", withSysctls(false, "kernel/shm_rmid_forced"), nil, true},
		{"unsafe not allowed", withSysctls(false, "kernel.msgmax"), nil, false},
		{"unsafe allowed by pattern", withSysctls(false, "kernel.msgmax"), []string{"kernel.msg*"}, true},
		{"allowed net sysctl with host network", withSysctls(true, "net.core.somaxconn"), []string{"net.core.somaxconn"}, false},
		{"allowed but not namespaced", withSysctls(false, "vm.swappiness"), []string{"vm.swappiness"}, false},
		// A safe sysctl is safe only in the pod's own namespace: with the host's it would set
		// the node's value, and runc refuses it long after admission.
		{"safe net sysctl with host network", withSysctls(true, "net.ipv4.tcp_syncookies"), nil, false},
		{"safe ipc sysctl with host network", withSysctls(true, "kernel.shm_rmid_forced"), nil, true},
	}
	for _, tc := range cases {
		ok, reason, msg := checkSysctls(tc.pod, tc.allowed)
		if ok != tc.ok || (!ok && reason != ReasonSysctlForbidden) {
			t.Errorf("%s: ok=%v reason=%q msg=%q, want ok=%v", tc.name, ok, reason, msg, tc.ok)
		}
	}
}

// As upstream, a sysctl of a namespace the pod shares with the host is refused at admission
// with SysctlForbidden, safe or allowed, and the message names the sysctl and the namespace.
func TestSysctlInHostNamespaceRefused(t *testing.T) {
	cases := []struct {
		sysctl           string
		hostNet, hostIPC bool
		allowed          []string
		want             string // "" when admitted
	}{
		{"net.ipv4.ip_local_port_range", true, false, nil, "host network"},
		{"net/ipv4/tcp_keepalive_time", true, false, nil, "host network"},
		{"net.ipv4.ip_local_port_range", false, true, nil, ""},
		{"kernel.shm_rmid_forced", false, true, nil, "host IPC"},
		{"kernel.msgmax", false, true, []string{"kernel.msg*"}, "host IPC"},
		{"kernel.sem", false, true, []string{"kernel.sem"}, "host IPC"},
		{"fs.mqueue.msg_max", false, true, []string{"fs.mqueue.*"}, "host IPC"},
		{"kernel.shm_rmid_forced", true, false, nil, ""},
	}
	for _, tc := range cases {
		pod := &v1.Pod{Spec: v1.PodSpec{HostNetwork: tc.hostNet, HostIPC: tc.hostIPC, SecurityContext: &v1.PodSecurityContext{
			Sysctls: []v1.Sysctl{{Name: tc.sysctl, Value: "1"}},
		}}}
		ok, reason, msg := checkSysctls(pod, tc.allowed)
		if tc.want == "" {
			if !ok {
				t.Errorf("%s (hostNetwork=%v hostIPC=%v): refused %q %q, want admitted", tc.sysctl, tc.hostNet, tc.hostIPC, reason, msg)
			}
			continue
		}
		if ok || reason != ReasonSysctlForbidden || !strings.Contains(msg, sysctl.Normalize(tc.sysctl)) || !strings.Contains(msg, tc.want) {
			t.Errorf("%s (hostNetwork=%v hostIPC=%v): ok=%v reason=%q message=%q; want %s naming the sysctl and %q",
				tc.sysctl, tc.hostNet, tc.hostIPC, ok, reason, msg, ReasonSysctlForbidden, tc.want)
		}
	}
}

func TestCheckAppArmor(t *testing.T) {
	pod := &v1.Pod{}
	pod.Spec.Containers = []v1.Container{{Name: "test"}}
	if ok, _, _ := checkAppArmor(pod, false); !ok {
		t.Fatal("pod without a profile refused")
	}
	pod.Annotations = map[string]string{v1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix + "test": "unconfined"}
	if ok, _, _ := checkAppArmor(pod, false); !ok {
		t.Fatal("unconfined annotation refused")
	}
	pod.Annotations = nil
	pod.Spec.Containers[0].SecurityContext = &v1.SecurityContext{AppArmorProfile: &v1.AppArmorProfile{Type: v1.AppArmorProfileTypeRuntimeDefault}}
	if ok, reason, _ := checkAppArmor(pod, false); ok || reason != ReasonAppArmor {
		t.Fatalf("runtime/default without AppArmor: ok=%v reason=%q", ok, reason)
	}
	if ok, _, _ := checkAppArmor(pod, true); !ok {
		t.Fatal("refused on a host with AppArmor")
	}
}

// A pod setting a field nodelet does not honour is refused, naming the field; the refusal is
// the pod's Failed status and a Warning event.
func TestAdmitRefusesUnhonouredPodField(t *testing.T) {
	recorder := record.NewFakeRecorder(4)
	st := status.NewManager(nil)
	a := &Admitter{Statuses: st, Recorder: recorder, HostHasAppArmor: func() bool { return true }}
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "nfs", UID: "u1"}, Spec: v1.PodSpec{
		Containers: []v1.Container{{Name: "c", Image: "i"}},
		Volumes:    []v1.Volume{{Name: "v", VolumeSource: v1.VolumeSource{NFS: &v1.NFSVolumeSource{Server: "s", Path: "/"}}}},
	}}
	ok, reason, msg := a.Admit(pod, nil)
	if ok || reason != podfields.Reason || !strings.HasPrefix(msg, "spec.volumes[0].nfs: ") {
		t.Fatalf("Admit = %v, %q, %q; want a refusal naming spec.volumes[0].nfs", ok, reason, msg)
	}
	a.Reject(pod, reason, msg)
	if got, _ := st.Get(pod.UID); got.Phase != v1.PodFailed || got.Reason != podfields.Reason || !strings.Contains(got.Message, "no nfs plugin") {
		t.Errorf("status %+v", got)
	}
	select {
	case ev := <-recorder.Events:
		if want := "Warning " + podfields.Reason + " spec.volumes[0].nfs: "; !strings.HasPrefix(ev, want) {
			t.Errorf("event %q, want it to start with %q", ev, want)
		}
	default:
		t.Error("no event for the refusal")
	}

	pod.Spec.Volumes[0].VolumeSource = v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}
	if ok, reason, msg := a.Admit(pod, nil); !ok {
		t.Errorf("the same pod with an emptyDir refused: %s: %s", reason, msg)
	}
}

// With the ImageVolume gate on, a pod with an image volume is refused on a runtime that would
// ignore CRI's Mount.image (containerd 1.6 and 2.0), naming the runtime and the versions that
// mount images; it is admitted on containerd 2.1 and later, and, with the gate off, anywhere
// (the volume manager then has no plugin for it, as upstream's).
func TestAdmitImageVolumesByRuntimeVersion(t *testing.T) {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "img", UID: "u1"}, Spec: v1.PodSpec{
		Containers: []v1.Container{{Name: "c", Image: "i"}},
		Volumes: []v1.Volume{{Name: "e", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
			{Name: "v", VolumeSource: v1.VolumeSource{Image: &v1.ImageVolumeSource{Reference: "busybox"}}}},
	}}
	for _, tc := range []struct {
		gate          bool
		name, version string
		wantOK        bool
	}{
		{true, "containerd", "1.6.20~ds1", false},
		{true, "containerd", "v2.0.5", false},
		{true, "fakecri", "9.9.9", false},
		{true, "", "", false}, // the runtime has not answered Version yet
		{true, "containerd", "v2.1.0", true},
		{true, "containerd", "v2.4.2", true},
		{true, "cri-o", "1.33.1", true},
		{false, "containerd", "1.6.20~ds1", true},
	} {
		features := &runtimefeatures.Store{}
		features.ObserveVersion(tc.name, tc.version)
		a := &Admitter{HostHasAppArmor: func() bool { return true }, RuntimeFeatures: features, ImageVolumes: tc.gate}
		ok, reason, msg := a.Admit(pod, nil)
		if ok != tc.wantOK {
			t.Errorf("gate %v on %s %s: Admit = %v, %q, %q; want %v", tc.gate, tc.name, tc.version, ok, reason, msg, tc.wantOK)
			continue
		}
		if !ok && (reason != podfields.Reason || !strings.HasPrefix(msg, "spec.volumes[1].image: ") ||
			!strings.Contains(msg, "containerd 2.1 or later") || tc.name != "" && !strings.Contains(msg, "this node runs "+tc.name+" "+strings.TrimPrefix(tc.version, "v"))) {
			t.Errorf("refusal on %s %s: %q %q; want %s naming the field, containerd 2.1 and the runtime", tc.name, tc.version, reason, msg, podfields.Reason)
		}
	}
}
