package podutil

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func annotated(annotations map[string]string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: annotations}}
}

func TestStaticMirrorCritical(t *testing.T) {
	file := annotated(map[string]string{AnnotationSource: FileSource})
	url := annotated(map[string]string{AnnotationSource: HTTPSource})
	api := annotated(map[string]string{AnnotationSource: APISource})
	mirror := annotated(map[string]string{AnnotationMirror: "abc"})
	critical := annotated(nil)
	critical.Spec.Priority = ptr.To[int32](SystemCriticalPriority)
	high := annotated(nil)
	high.Spec.Priority = ptr.To[int32](SystemCriticalPriority - 1)
	for _, tc := range []struct {
		name                       string
		pod                        *v1.Pod
		static, mirror, isCritical bool
	}{
		{"file", file, true, false, true},
		{"url", url, true, false, true},
		{"api", api, false, false, false},
		{"mirror", mirror, false, true, true},
		{"system-critical priority", critical, false, false, true},
		{"just below", high, false, false, false},
	} {
		if got := IsStatic(tc.pod); got != tc.static {
			t.Errorf("%s: IsStatic = %v", tc.name, got)
		}
		if got := IsMirror(tc.pod); got != tc.mirror {
			t.Errorf("%s: IsMirror = %v", tc.name, got)
		}
		if got := IsCritical(tc.pod); got != tc.isCritical {
			t.Errorf("%s: IsCritical = %v", tc.name, got)
		}
	}
}

func TestFindContainer(t *testing.T) {
	pod := &v1.Pod{Spec: v1.PodSpec{
		InitContainers:      []v1.Container{{Name: "init"}},
		Containers:          []v1.Container{{Name: "app"}},
		EphemeralContainers: []v1.EphemeralContainer{{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "debug"}}},
	}}
	if c := FindContainer(pod, "init"); c != &pod.Spec.InitContainers[0] {
		t.Errorf("init: got %v", c)
	}
	if c := FindContainer(pod, "app"); c != &pod.Spec.Containers[0] {
		t.Errorf("app: got %v", c)
	}
	if c := FindContainer(pod, "debug"); c != nil {
		t.Errorf("FindContainer found the ephemeral container %v", c)
	}
	if c := FindAnyContainer(pod, "debug"); c == nil || c.Name != "debug" {
		t.Errorf("FindAnyContainer(debug) = %v", c)
	}
	if c := FindAnyContainer(pod, "none"); c != nil {
		t.Errorf("FindAnyContainer(none) = %v", c)
	}
}

func TestBareContainerID(t *testing.T) {
	cases := [][2]string{ // API form, bare form
		{"containerd://abc", "abc"},
		{"abc", "abc"},
		{"", ""},
		{"cri-o://x://y", "x://y"}, // only the first scheme is the runtime's
	}
	for _, c := range cases {
		if got := BareContainerID(c[0]); got != c[1] {
			t.Errorf("BareContainerID(%q) = %q, want %q", c[0], got, c[1])
		}
	}
}
