package objects

import (
	"context"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/nodelet/nodelet/internal/lib/kubeclient/kubeclienttest"
	"github.com/nodelet/nodelet/internal/testutil"
)

func podUsing(name, configMap, secret string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name)},
		Spec: v1.PodSpec{
			Volumes: []v1.Volume{{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{
				LocalObjectReference: v1.LocalObjectReference{Name: configMap}}}}},
			Containers: []v1.Container{{Name: "c", EnvFrom: []v1.EnvFromSource{{SecretRef: &v1.SecretEnvSource{
				LocalObjectReference: v1.LocalObjectReference{Name: secret}}}}}},
		}}
}

func configMap(name, value string) *v1.ConfigMap {
	return &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}, Data: map[string]string{"k": value}}
}

func gets(cs *fake.Clientset) int {
	n := 0
	for _, a := range cs.Actions() {
		if a.GetVerb() == "get" {
			n++
		}
	}
	return n
}

// Watch: one watch per object whatever the number of pods, reads from memory (no GET), sees
// changes, and ends with the last pod using the object.
func TestWatchStrategySharesOneWatchPerObject(t *testing.T) {
	cs := fake.NewSimpleClientset(configMap("app", "v1"), &v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds", Namespace: "ns"}})
	m := New(kubeclienttest.FromClientset(cs), Watch)
	testutil.Start(t, m.Run)
	ctx := context.Background()
	for started := false; !started; time.Sleep(time.Millisecond) {
		m.mu.Lock()
		started = m.running
		m.mu.Unlock()
	}
	first, second := podUsing("a", "app", "creds"), podUsing("b", "app", "creds")
	m.PodChanged(nil, first)
	m.PodChanged(nil, second)

	cm, err := m.GetConfigMap(ctx, "ns", "app")
	if err != nil || cm.Data["k"] != "v1" {
		t.Fatalf("configmap %v, %v", cm, err)
	}
	if _, err := m.GetSecret(ctx, "ns", "creds"); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().ConfigMaps("ns").Update(ctx, configMap("app", "v2"), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, "the change", func() bool {
		cm, _ := m.GetConfigMap(ctx, "ns", "app")
		return cm.Data["k"] == "v2"
	})
	if n := gets(cs); n != 0 {
		t.Errorf("%d GETs, want every read from the watch", n)
	}
	m.mu.Lock()
	watches := len(m.watches)
	m.mu.Unlock()
	if watches != 2 {
		t.Errorf("%d watches for two pods on one configmap and one secret, want 2", watches)
	}

	m.PodChanged(first, nil)
	m.PodChanged(second, podUsing("b", "other", "creds")) // b stops using app
	m.mu.Lock()
	_, appWatched := m.watches[key{kindConfigMap, "ns", "app"}]
	m.mu.Unlock()
	if appWatched {
		t.Error("the configmap is still watched after its last pod let go")
	}
	_, err = m.GetConfigMap(ctx, "ns", "other")
	if !apierrors.IsNotFound(err) || !strings.Contains(err.Error(), `configmap "other" not found`) {
		t.Errorf("missing configmap: %v", err)
	}
}

// Cache: a read within the TTL costs nothing; after it, or for a newly registered pod, the
// object is read again.
func TestCacheStrategyRereadsAfterTheTTL(t *testing.T) {
	cs := fake.NewSimpleClientset(configMap("app", "v1"))
	m := New(kubeclienttest.FromClientset(cs), Cache)
	now := time.Now()
	m.now = func() time.Time { return now }
	pod := podUsing("a", "app", "creds")
	m.PodChanged(nil, pod)
	ctx := context.Background()
	for range 3 {
		if _, err := m.GetConfigMap(ctx, "ns", "app"); err != nil {
			t.Fatal(err)
		}
	}
	if n := gets(cs); n != 1 {
		t.Errorf("%d GETs within the TTL, want 1", n)
	}
	now = now.Add(cacheTTL)
	_, _ = m.GetConfigMap(ctx, "ns", "app")
	m.PodChanged(nil, podUsing("b", "app", "creds"))
	_, _ = m.GetConfigMap(ctx, "ns", "app")
	if n := gets(cs); n != 3 {
		t.Errorf("%d GETs, want one more after the TTL and one more for the new pod", n)
	}
}

// Get: every read goes to the API server.
func TestGetStrategyReadsEveryTime(t *testing.T) {
	cs := fake.NewSimpleClientset(configMap("app", "v1"))
	m := New(kubeclienttest.FromClientset(cs), Get)
	m.PodChanged(nil, podUsing("a", "app", "creds"))
	for range 2 {
		_, _ = m.GetConfigMap(context.Background(), "ns", "app")
	}
	if n := gets(cs); n != 2 {
		t.Errorf("%d GETs, want 2", n)
	}
}
