package admission

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodelet/nodelet/internal/pod/status"
)

func withPort(name string, port int32, ip string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(name)},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Ports: []v1.ContainerPort{{ContainerPort: 80, HostPort: port, HostIP: ip}}}}}}
}

// A pod bound around the scheduler is refused with the predicate's name and the scheduler's
// reason, as the upstream kubelet refuses it.
func TestSchedulerPredicatesAtAdmission(t *testing.T) {
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a", Labels: map[string]string{"disk": "ssd"}},
		Spec: v1.NodeSpec{Taints: []v1.Taint{
			{Key: "dedicated", Value: "db", Effect: v1.TaintEffectNoExecute},
			{Key: "gpu", Effect: v1.TaintEffectNoSchedule}, // the kubelet leaves NoSchedule to the scheduler
		}}}
	a := &Admitter{Statuses: status.NewManager(nil), Node: func() *v1.Node { return node }}
	tolerating := func(p *v1.Pod) *v1.Pod {
		p.Spec.Tolerations = []v1.Toleration{{Key: "dedicated", Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute}}
		return p
	}
	held := []*v1.Pod{tolerating(withPort("web", 8080, "127.0.0.1"))}

	selector := tolerating(withPort("selector", 0, ""))
	selector.Spec.NodeSelector = map[string]string{"disk": "hdd"}
	elsewhere := tolerating(withPort("elsewhere", 0, ""))
	elsewhere.Spec.NodeName = "node-b"
	static := withPort("static", 0, "")
	static.Annotations = map[string]string{"kubernetes.io/config.source": "file"}
	matching := tolerating(withPort("matching", 8080, "10.0.0.1"))
	matching.Spec.NodeSelector = map[string]string{"disk": "ssd"}

	for _, tc := range []struct {
		pod    *v1.Pod
		reason string
	}{
		{selector, "NodeAffinity"},
		{elsewhere, "NodeName"},
		{tolerating(withPort("clash", 8080, "")), "NodePorts"}, // 0.0.0.0 overlaps 127.0.0.1
		{tolerating(withPort("clash-ip", 8080, "127.0.0.1")), "NodePorts"},
		{withPort("untolerated", 0, ""), "TaintToleration"},
		{static, ""},   // static pods are not held to taints
		{matching, ""}, // another address on the same port, and a matching selector
	} {
		ok, reason, msg := a.Admit(tc.pod, held)
		if reason != tc.reason || ok != (tc.reason == "") {
			t.Errorf("%s: admitted %v reason %q (%s), want %q", tc.pod.Name, ok, reason, msg, tc.reason)
		}
		if tc.reason == "NodeAffinity" && msg != "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector" {
			t.Errorf("message %q", msg)
		}
	}
}
