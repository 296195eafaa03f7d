package shutdown

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"
	"k8s.io/utils/ptr"
)

func TestGroupsFromTheConfiguration(t *testing.T) {
	kc := &kubeletconfigv1beta1.KubeletConfiguration{}
	if g := Groups(kc); len(g) != 0 {
		t.Errorf("off: %v", g)
	}
	kc.ShutdownGracePeriod = metav1.Duration{Duration: 30 * time.Second}
	kc.ShutdownGracePeriodCriticalPods = metav1.Duration{Duration: 10 * time.Second}
	want := []Group{{0, 20 * time.Second}, {2000000000, 10 * time.Second}}
	if g := Groups(kc); !slices.Equal(g, want) {
		t.Errorf("migrated: %v, want %v", g, want)
	}
	kc = &kubeletconfigv1beta1.KubeletConfiguration{ShutdownGracePeriodByPodPriority: []kubeletconfigv1beta1.ShutdownGracePeriodByPodPriority{
		{Priority: 100000, ShutdownGracePeriodSeconds: 5}, {Priority: 0, ShutdownGracePeriodSeconds: 3}}}
	want = []Group{{0, 3 * time.Second}, {100000, 5 * time.Second}}
	if g := Groups(kc); !slices.Equal(g, want) {
		t.Errorf("by priority: %v, want %v", g, want)
	}
}

func podWithPriority(name string, priority int32, grace int64) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.PodSpec{Priority: ptr.To(priority), TerminationGracePeriodSeconds: ptr.To(grace)}}
}

// Lower priorities go first, each pod with the smaller of its grace period and its group's;
// a group that does not finish in time is left behind; every pod is marked as upstream marks
// it; new pods are refused and readiness fails meanwhile.
func TestShutdownTerminatesByPriority(t *testing.T) {
	var mu sync.Mutex
	var order []string
	graces := map[string]int64{}
	stuck := "stuck"
	statuses := map[string]v1.PodStatus{}
	pods := []*v1.Pod{podWithPriority("critical", 2000000000, 30), podWithPriority("web", 0, 30),
		podWithPriority("batch", -10, 1), podWithPriority(stuck, 0, 30)}
	m := New([]Group{{0, 2 * time.Second}, {2000000000, time.Second}}, Deps{
		ActivePods: func() []*v1.Pod { return pods },
		Kill: func(p *v1.Pod, grace int64, set func(*v1.PodStatus)) {
			mu.Lock()
			defer mu.Unlock()
			order, graces[p.Name] = append(order, p.Name), grace
			st := v1.PodStatus{Phase: v1.PodRunning, Conditions: []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue}}}
			set(&st)
			statuses[p.Name] = st
		},
		Gone: func(p *v1.Pod) bool { return p.Name != stuck },
	})
	m.poll = time.Millisecond
	if ok, _, _ := m.Admit(pods[0]); !ok || m.Status() != nil {
		t.Fatal("refusing before the shutdown")
	}
	start := time.Now()
	m.Shutdown(context.Background())
	if took := time.Since(start); took < 2*time.Second || took > 3*time.Second {
		t.Errorf("took %v: the stuck pod's group should use its 2s, the critical group none", took)
	}
	if len(order) != 4 || order[3] != "critical" {
		t.Errorf("kill order %v, want critical last", order)
	}
	if graces["web"] != 2 || graces["batch"] != 1 || graces["critical"] != 1 {
		t.Errorf("grace periods %v", graces)
	}
	st := statuses["web"]
	if st.Phase != v1.PodFailed || st.Reason != "Terminated" || st.Message != "Pod was terminated in response to imminent node shutdown." ||
		len(st.Conditions) != 2 || st.Conditions[1].Type != v1.DisruptionTarget || st.Conditions[1].Reason != "TerminationByKubelet" ||
		st.Conditions[0].Status != v1.ConditionFalse || st.Conditions[0].Reason != "PodFailed" {
		t.Errorf("status %+v", st)
	}
	if ok, reason, _ := m.Admit(podWithPriority("late", 0, 1)); ok || reason != "NodeShutdown" {
		t.Errorf("a pod during shutdown: admitted %v reason %q", ok, reason)
	}
	if m.Status() != ErrShuttingDown {
		t.Errorf("status %v", m.Status())
	}
}
