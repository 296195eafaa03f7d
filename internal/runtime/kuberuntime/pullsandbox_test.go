package kuberuntime

import (
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
)

// As upstream, PullImage carries the pod's sandbox config (the attempt the sandbox runs
// with, its resources) and the pod's annotations in the image spec; the runtime handler only
// with RuntimeClassInImageCriApi.
func TestPullImageCarriesTheSandboxConfig(t *testing.T) {
	for _, gate := range []bool{false, true} {
		e := newTestEnv(t, func(o *Options) {
			o.RuntimeClasses = classesFunc(func(*v1.Pod) (string, error) { return "kata", nil })
			o.PullRuntimeHandler = gate
		})
		e.fake.AddHandlers("kata")
		c := ctr("a", "sleep", "1")
		c.Image = "example.com/app:1"
		c.Resources = v1.ResourceRequirements{Limits: quantities("memory", "64Mi")}
		pod := newPod("pull", c)
		e.sync(pod)
		pulls := e.fake.Pulls()
		if len(pulls) != 1 {
			t.Fatalf("want 1 pull, got %d (calls %v)", len(pulls), e.fake.Calls())
		}
		p := pulls[0]
		if got := p.GetImage().GetImage(); got != "example.com/app:1" {
			t.Errorf("pulled %q", got)
		}
		if got := p.GetImage().GetAnnotations(); !reflect.DeepEqual(got, pod.Annotations) {
			t.Errorf("image spec annotations %v, want the pod's %v", got, pod.Annotations)
		}
		want := ""
		if gate {
			want = "kata"
		}
		if got := p.GetImage().GetRuntimeHandler(); got != want {
			t.Errorf("RuntimeClassInImageCriApi=%v: image spec runtime handler %q, want %q", gate, got, want)
		}
		sb := p.GetSandboxConfig()
		run := e.fake.Sandboxes()[0].Config
		if sb.GetMetadata().GetUid() != string(pod.UID) || sb.GetMetadata().GetAttempt() != run.GetMetadata().GetAttempt() {
			t.Errorf("pull's sandbox metadata %v, want the sandbox's %v", sb.GetMetadata(), run.GetMetadata())
		}
		if got := sb.GetLinux().GetResources().GetMemoryLimitInBytes(); got != 64<<20 {
			t.Errorf("pull's sandbox config memory limit %d, want the pod's %d", got, 64<<20)
		}
		if !reflect.DeepEqual(sb.GetLabels(), run.GetLabels()) || sb.GetHostname() != run.GetHostname() {
			t.Errorf("pull's sandbox config %v differs from the sandbox's %v", sb, run)
		}
	}
}
