package kuberuntime

import (
	"errors"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
)

// The RuntimeClass's handler reaches RunPodSandbox; a class that cannot be resolved, or a
// handler the runtime lacks, fails the sandbox with a FailedCreatePodSandBox event and
// starts no container.
func TestRuntimeHandlerReachesTheSandbox(t *testing.T) {
	handlers := map[string]string{"sandboxed": "test-handler", "unconfigured": "nope"}
	e := newTestEnv(t, func(o *Options) {
		o.RuntimeClasses = classesFunc(func(pod *v1.Pod) (string, error) {
			h, ok := handlers[*pod.Spec.RuntimeClassName]
			if !ok {
				return "", errors.New(`runtimeclass.node.k8s.io "gone" not found`)
			}
			return h, nil
		})
	})
	e.fake.AddHandlers("test-handler")
	for class, wantEvent := range map[string]string{
		"sandboxed":    "",
		"unconfigured": `Warning FailedCreatePodSandBox Failed to create pod sandbox: run pod sandbox: rpc error: code = Unknown desc = failed to get sandbox runtime: no runtime for "nope" is configured`,
		"gone":         `Warning FailedCreatePodSandBox Failed to create pod sandbox: runtimeclass.node.k8s.io "gone" not found`,
	} {
		pod := newPod(class, ctr("app"))
		pod.Spec.RuntimeClassName = &class
		res := e.sync(pod)
		events := e.events()
		if wantEvent == "" {
			if res.Err != nil {
				t.Fatalf("%s: %v", class, res.Err)
			}
			continue
		}
		if res.Err == nil || !slices.Contains(events, wantEvent) {
			t.Errorf("%s: err %v, events %q; want %q", class, res.Err, events, wantEvent)
		}
	}
	var got []string
	for _, sb := range e.fake.Sandboxes() {
		got = append(got, sb.Config.Metadata.Name+"="+sb.Handler)
	}
	if strings.Join(got, ",") != "sandboxed=test-handler" {
		t.Errorf("sandboxes %v, want only sandboxed=test-handler", got)
	}
	if n := len(e.fake.Containers()); n != 1 {
		t.Errorf("%d containers, want the sandboxed pod's one", n)
	}
}

// classesFunc is a RuntimeClasses made of a function.
type classesFunc func(pod *v1.Pod) (string, error)

func (f classesFunc) Handler(pod *v1.Pod) (string, error) { return f(pod) }
