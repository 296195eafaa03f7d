package source

import (
	"strings"
	"testing"
	"unicode"

	v1 "k8s.io/api/core/v1"

	"github.com/nodelet/nodelet/internal/podspec/podutil"
)

// FuzzDecodeAndValidate feeds bytes through the decoding and validation a static pod
// manifest (a file: one Pod) and a manifest URL body (a Pod or a PodList) go through. Whatever
// is accepted must be safe to turn into host paths and /etc/hosts lines.
func FuzzDecodeAndValidate(f *testing.F) {
	for _, seed := range fuzzSeeds {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s := newStaticPods(testNode, podutil.HTTPSource)
		if pod, err := s.fromManifest(data, "/etc/kubernetes/manifests/pod.yaml"); err == nil {
			checkAccepted(t, pod)
		}
		if pods, err := s.fromBody(data, "http://127.0.0.1/pods"); err == nil {
			for _, pod := range pods {
				checkAccepted(t, pod)
			}
		}
	})
}

func checkAccepted(t *testing.T, pod *v1.Pod) {
	t.Helper()
	component := func(what, s string) {
		if s == "" || s == "." || s == ".." || strings.ContainsAny(s, "/\\\x00") || strings.ContainsFunc(s, unicode.IsSpace) {
			t.Fatalf("accepted pod with %s %q: not a safe single path component", what, s)
		}
	}
	component("uid", string(pod.UID))
	component("name", pod.Name)
	component("namespace", pod.Namespace)
	if strings.Contains(string(pod.UID), "_") || strings.Contains(pod.Name, "_") || strings.Contains(pod.Namespace, "_") {
		t.Fatalf("accepted pod %s/%s uid %s: '_' would make its log directory name ambiguous", pod.Namespace, pod.Name, pod.UID)
	}
	for _, list := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range list {
			component("container name", c.Name)
		}
	}
	for _, c := range pod.Spec.EphemeralContainers {
		component("ephemeral container name", c.Name)
	}
	for _, v := range pod.Spec.Volumes {
		component("volume name", v.Name)
	}
	for _, a := range pod.Spec.HostAliases {
		for _, s := range append([]string{a.IP}, a.Hostnames...) {
			if s == "" || strings.ContainsFunc(s, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) || r == '#' }) {
				t.Fatalf("accepted hostAlias field %q: it would not stay one entry of one /etc/hosts line", s)
			}
		}
	}
}

var fuzzSeeds = []string{
	manifest("web", "nginx:1"),
	`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web","uid":"6b1f0c1e-0d3a-4b55-9c3e-1a2b3c4d5e6f"},"spec":{"containers":[{"name":"main","image":"busybox:1"}]}}`,
	`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web","uid":"../../../tmp/x"},"spec":{"containers":[{"name":"main","image":"busybox:1"}]}}`,
	`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"../web","namespace":"../ns"},"spec":{"containers":[{"name":"a/b","image":"busybox:1"}]}}`,
	`apiVersion: v1
kind: Pod
metadata:
  name: aliases
spec:
  hostAliases:
  - ip: "1.2.3.4\n6.6.6.6 evil"
    hostnames: ["ok", "x\ny"]
  containers:
  - name: main
    image: busybox:1
`,
	`apiVersion: v1
kind: PodList
items:
- metadata: {name: a, uid: "a_b"}
  spec: {containers: [{name: c, image: "x:1"}], volumes: [{name: "..", emptyDir: {}}]}
- metadata: {name: b}
  spec:
    containers: [{name: c, image: "x:1", volumeMounts: [{name: v, mountPath: /v, subPath: ../x}]}]
    volumes: [{name: v, hostPath: {path: /var/../etc}}]
`,
	`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"e"},"spec":{"containers":[{"name":"m","image":"x:1"}],"ephemeralContainers":[{"name":"../d","image":"x:1"}]}}`,
}
