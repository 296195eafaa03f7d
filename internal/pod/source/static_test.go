package source

import (
	"encoding/hex"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/nodelet/nodelet/internal/podspec/podutil"
)

func fixedClock(times ...time.Time) func() time.Time {
	return func() time.Time {
		t := times[0]
		if len(times) > 1 {
			times = times[1:]
		}
		return t
	}
}

func TestStaticPodNamingAndAnnotations(t *testing.T) {
	s := newStaticPods("Node1", podutil.FileSource)
	first := time.Date(2024, 5, 1, 10, 0, 0, 123, time.UTC)
	s.now = fixedClock(first)
	pod, err := s.fromManifest([]byte(manifest("web", "nginx:1.25")), "/etc/pods/web.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if pod.Name != "web-node1" {
		t.Errorf("name = %q, want web-node1 (node name lower-cased)", pod.Name)
	}
	if pod.Namespace != "default" {
		t.Errorf("namespace = %q, want default", pod.Namespace)
	}
	if pod.Spec.NodeName != "Node1" {
		t.Errorf("nodeName = %q", pod.Spec.NodeName)
	}
	if len(pod.UID) != 32 {
		t.Errorf("UID %q is not 32 hex chars", pod.UID)
	} else if _, err := hex.DecodeString(string(pod.UID)); err != nil {
		t.Errorf("UID %q is not hex: %v", pod.UID, err)
	}
	want := map[string]string{
		podutil.AnnotationHash:   string(pod.UID),
		podutil.AnnotationSource: podutil.FileSource,
		podutil.AnnotationSeen:   first.Format(time.RFC3339Nano),
	}
	for k, v := range want {
		if pod.Annotations[k] != v {
			t.Errorf("annotation %s = %q, want %q", k, pod.Annotations[k], v)
		}
	}
	found := false
	for _, tol := range pod.Spec.Tolerations {
		if tol.Operator == v1.TolerationOpExists && tol.Effect == v1.TaintEffectNoExecute && tol.Key == "" {
			found = true
		}
	}
	if !found {
		t.Errorf("no NoExecute toleration in %+v", pod.Spec.Tolerations)
	}
	if pod.Status.Phase != v1.PodPending {
		t.Errorf("phase = %q, want Pending", pod.Status.Phase)
	}
	if pod.Spec.RestartPolicy != v1.RestartPolicyAlways {
		t.Errorf("defaults not applied: restartPolicy %q", pod.Spec.RestartPolicy)
	}
}

func TestStaticPodUID(t *testing.T) {
	const path = "/etc/pods/web.yaml"
	base := manifest("web", "nginx:1.25")
	uid := func(node, location, content string) string {
		t.Helper()
		pod, err := newStaticPods(node, podutil.FileSource).fromManifest([]byte(content), location)
		if err != nil {
			t.Fatal(err)
		}
		return string(pod.UID)
	}
	orig := uid("node1", path, base)
	if again := uid("node1", path, base); again != orig {
		t.Errorf("UID changed across restarts: %s vs %s", orig, again)
	}
	reformatted := "# a comment\n" + strings.ReplaceAll(base, "  containers:", "  containers:   ")
	if got := uid("node1", path, reformatted); got != orig {
		t.Errorf("UID changed for the same decoded content: %s vs %s", orig, got)
	}
	json := `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web"},"spec":{"containers":[{"name":"main","image":"nginx:1.25"}]}}`
	if got := uid("node1", path, json); got != orig {
		t.Errorf("JSON form of the same pod got UID %s, want %s", got, orig)
	}
	for name, got := range map[string]string{
		"edited":     uid("node1", path, manifest("web", "nginx:1.26")),
		"other node": uid("node2", path, base),
		"other path": uid("node1", "/etc/pods/web2.yaml", base),
	} {
		if got == orig {
			t.Errorf("%s: UID did not change", name)
		}
	}
	explicit := strings.Replace(base, "  name: web\n", "  name: web\n  uid: my-uid\n", 1)
	if got := uid("node1", path, explicit); got != "my-uid" {
		t.Errorf("explicit UID replaced: %s", got)
	}
}

func TestStaticPodSeenStablePerUID(t *testing.T) {
	s := newStaticPods(testNode, podutil.HTTPSource)
	t1 := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	s.now = fixedClock(t1, t1.Add(time.Minute), t1.Add(2*time.Minute))
	a, _ := s.fromManifest([]byte(manifest("web", "nginx:1")), "u")
	b, _ := s.fromManifest([]byte(manifest("web", "nginx:1")), "u")
	if a.Annotations[podutil.AnnotationSeen] != b.Annotations[podutil.AnnotationSeen] {
		t.Errorf("seen changed on re-read: %s vs %s", a.Annotations[podutil.AnnotationSeen], b.Annotations[podutil.AnnotationSeen])
	}
	if a.Annotations[podutil.AnnotationSource] != podutil.HTTPSource {
		t.Errorf("source = %q", a.Annotations[podutil.AnnotationSource])
	}
	c, _ := s.fromManifest([]byte(manifest("web", "nginx:2")), "u")
	if c.Annotations[podutil.AnnotationSeen] == a.Annotations[podutil.AnnotationSeen] {
		t.Error("an edited manifest kept the old seen time")
	}
	s.forgetOthers(nil)
	if len(s.seen) != 0 {
		t.Errorf("forgetOthers kept %d entries", len(s.seen))
	}
}

func TestDecodeRejections(t *testing.T) {
	cases := map[string]struct {
		content    string
		wantReason string
		wantMsg    string
	}{
		"empty":        {"  \n", ReasonFailedToDecode, "manifest is empty"},
		"not yaml":     {"{{{", ReasonFailedToDecode, "not a JSON or YAML object"},
		"other kind":   {"apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: x\n", ReasonFailedToDecode, `kind "Deployment" apiVersion "apps/v1" is not supported: want kind Pod apiVersion v1`},
		"no kind":      {"metadata:\n  name: x\n", ReasonFailedToDecode, "missing kind or apiVersion"},
		"two docs":     {manifest("a", "x:1") + "---\n" + manifest("b", "x:1"), ReasonFailedToDecode, "2 YAML documents"},
		"bad field":    {"apiVersion: v1\nkind: Pod\nmetadata:\n  name: x\nspec:\n  containers: 5\n", ReasonFailedToDecode, "decode Pod"},
		"no name":      {strings.Replace(manifest("x", "x:1"), "  name: x\n", "  labels: {}\n", 1), ReasonInvalidManifest, "metadata.name: Required value"},
		"no image":     {manifest("x", `""`), ReasonInvalidManifest, "spec.containers[0].image: Required value"},
		"bad pod name": {manifest("Bad_Name", "x:1"), ReasonInvalidManifest, "metadata.name: Invalid value"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := newStaticPods(testNode, podutil.FileSource).fromManifest([]byte(tc.content), "f")
			if err == nil {
				t.Fatal("accepted")
			}
			if got := errorReason(err); got != tc.wantReason {
				t.Errorf("reason = %s, want %s (err %v)", got, tc.wantReason, err)
			}
			if !strings.Contains(err.Error(), tc.wantMsg) {
				t.Errorf("error %q does not contain %q", err, tc.wantMsg)
			}
		})
	}
}

func TestLeadingDocumentSeparatorAccepted(t *testing.T) {
	if _, err := newStaticPods(testNode, podutil.FileSource).fromManifest([]byte("---\n"+manifest("a", "x:1")+"---\n"), "f"); err != nil {
		t.Fatal(err)
	}
}

func TestFromBodyPodList(t *testing.T) {
	list := `apiVersion: v1
kind: PodList
items:
- metadata: {name: a}
  spec: {containers: [{name: c, image: "x:1"}]}
- metadata: {name: b, namespace: kube-system}
  spec: {containers: [{name: c, image: "x:1"}]}
`
	pods, err := newStaticPods(testNode, podutil.HTTPSource).fromBody([]byte(list), "http://x")
	if err != nil {
		t.Fatal(err)
	}
	if got := names(pods); len(got) != 2 || got[0] != "a-node1" || got[1] != "b-node1" {
		t.Fatalf("names = %v", got)
	}
	if pods[1].Namespace != "kube-system" || pods[0].UID == pods[1].UID {
		t.Errorf("namespace %q, UIDs %s %s", pods[1].Namespace, pods[0].UID, pods[1].UID)
	}

	bad := strings.Replace(list, `name: b, namespace: kube-system`, `name: a`, 1)
	if _, err := newStaticPods(testNode, podutil.HTTPSource).fromBody([]byte(bad), "http://x"); err == nil ||
		!strings.Contains(err.Error(), `items[1]: duplicate pod name "default/a-node1"`) {
		t.Errorf("duplicate names: err = %v", err)
	}
	noImage := strings.Replace(list, `{name: c, image: "x:1"}]}
- metadata: {name: b`, `{name: c}]}
- metadata: {name: b`, 1)
	if _, err := newStaticPods(testNode, podutil.HTTPSource).fromBody([]byte(noImage), "http://x"); err == nil ||
		!strings.Contains(err.Error(), "items[0]: spec.containers[0].image: Required value") {
		t.Errorf("missing image: err = %v", err)
	}
	if _, err := newStaticPods(testNode, podutil.HTTPSource).fromBody([]byte("apiVersion: v1\nkind: Service\n"), "u"); err == nil ||
		!strings.Contains(err.Error(), "want kind Pod or PodList") {
		t.Errorf("service: err = %v", err)
	}
}
