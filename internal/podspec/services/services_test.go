package services

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/nodelet/nodelet/internal/lib/kubeclient/kubeclienttest"
	"github.com/nodelet/nodelet/internal/podspec/podutil"
)

func service(ns, name, ip string, ports ...v1.ServicePort) *v1.Service {
	return &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: v1.ServiceSpec{ClusterIP: ip, Ports: ports}}
}

func envMap(vars []v1.EnvVar) map[string]string {
	out := map[string]string{}
	for _, v := range vars {
		out[v.Name] = v.Value
	}
	return out
}

func TestEnvVarsFormat(t *testing.T) {
	svc := service("ns", "foo-service", "10.0.0.11",
		v1.ServicePort{Name: "http", Port: 8765, Protocol: v1.ProtocolTCP},
		v1.ServicePort{Port: 53, Protocol: v1.ProtocolUDP})
	got := envMap(EnvVars([]*v1.Service{svc, service("ns", "headless", v1.ClusterIPNone, v1.ServicePort{Port: 80, Protocol: v1.ProtocolTCP})}))
	want := map[string]string{
		"FOO_SERVICE_SERVICE_HOST":        "10.0.0.11",
		"FOO_SERVICE_SERVICE_PORT":        "8765",
		"FOO_SERVICE_SERVICE_PORT_HTTP":   "8765",
		"FOO_SERVICE_PORT":                "tcp://10.0.0.11:8765",
		"FOO_SERVICE_PORT_8765_TCP":       "tcp://10.0.0.11:8765",
		"FOO_SERVICE_PORT_8765_TCP_PROTO": "tcp",
		"FOO_SERVICE_PORT_8765_TCP_PORT":  "8765",
		"FOO_SERVICE_PORT_8765_TCP_ADDR":  "10.0.0.11",
		"FOO_SERVICE_PORT_53_UDP":         "udp://10.0.0.11:53",
		"FOO_SERVICE_PORT_53_UDP_PROTO":   "udp",
		"FOO_SERVICE_PORT_53_UDP_PORT":    "53",
		"FOO_SERVICE_PORT_53_UDP_ADDR":    "10.0.0.11",
	}
	if len(got) != len(want) {
		t.Errorf("got %d variables, want %d: %v", len(got), len(want), got)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
}

func TestListerPicksNamespaceAndMasterServices(t *testing.T) {
	cs := fake.NewSimpleClientset(
		service("default", "kubernetes", "10.96.0.1", v1.ServicePort{Name: "https", Port: 443, Protocol: v1.ProtocolTCP}),
		service("ns", "mine", "10.0.0.2", v1.ServicePort{Port: 80, Protocol: v1.ProtocolTCP}),
		service("other", "theirs", "10.0.0.3", v1.ServicePort{Port: 80, Protocol: v1.ProtocolTCP}),
	)
	l := NewLister(kubeclienttest.FromClientset(cs))
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}}
	if _, err := l.EnvVars(pod); err != ErrNotSynced {
		t.Fatalf("before the first list: err %v, want ErrNotSynced", err)
	}
	// A static pod (the API server itself, or one started during TLS bootstrap) does not wait.
	static := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s", Annotations: map[string]string{podutil.AnnotationSource: podutil.FileSource}}}
	if vars, err := l.EnvVars(static); err != nil || len(vars) != 0 {
		t.Fatalf("static pod before the first list: %v, %v; want no variables and no error", vars, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go l.Run(ctx)
	deadline := time.Now().Add(5 * time.Second)
	for !l.informer.HasSynced() && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	vars, err := l.EnvVars(pod)
	got := envMap(vars)
	if err != nil || got["MINE_SERVICE_HOST"] != "10.0.0.2" || got["KUBERNETES_SERVICE_HOST"] != "10.96.0.1" || got["THEIRS_SERVICE_HOST"] != "" {
		t.Fatalf("links on: %v, %v", got, err)
	}
	off := false
	pod.Spec.EnableServiceLinks = &off
	vars, _ = l.EnvVars(pod)
	got = envMap(vars)
	if got["MINE_SERVICE_HOST"] != "" || got["KUBERNETES_SERVICE_PORT_HTTPS"] != "443" {
		t.Fatalf("links off: %v, want only the kubernetes service", got)
	}
}
