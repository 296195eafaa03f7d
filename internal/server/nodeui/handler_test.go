package nodeui

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodelet/nodelet/internal/lib/version"
	"github.com/nodelet/nodelet/internal/podspec/timeline"
)

var testNow = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)

func testPods() []*v1.Pod {
	started := metav1.NewTime(testNow.Add(-time.Minute))
	ready := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", UID: "u-web"},
		Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "app"}}},
		Status: v1.PodStatus{
			Phase: v1.PodRunning, PodIP: "10.85.0.7", QOSClass: v1.PodQOSBestEffort, StartTime: &started,
			Conditions:        []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue}},
			ContainerStatuses: []v1.ContainerStatus{{Name: "app", Ready: true, State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}},
		},
	}
	crashing := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "crash", UID: "u-crash"},
		Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "main"}, {Name: "side"}}},
		Status: v1.PodStatus{
			Phase:      v1.PodRunning,
			Conditions: []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionFalse, Reason: "ContainersNotReady"}},
			ContainerStatuses: []v1.ContainerStatus{
				{Name: "main", RestartCount: 3, State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off 40s"}},
					LastTerminationState: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 1}}},
				{Name: "side", Ready: true, RestartCount: 1, State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}},
			},
		},
	}
	return []*v1.Pod{ready, crashing}
}

func testNode() *v1.Node {
	return &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "node-a"},
		Status: v1.NodeStatus{
			Capacity: v1.ResourceList{
				v1.ResourceCPU: resource.MustParse("4"), v1.ResourceMemory: resource.MustParse("8Gi"), v1.ResourcePods: resource.MustParse("110"),
			},
			Allocatable: v1.ResourceList{
				v1.ResourceCPU: resource.MustParse("3500m"), v1.ResourceMemory: resource.MustParse("7Gi"), v1.ResourcePods: resource.MustParse("110"),
			},
			Conditions: []v1.NodeCondition{
				{Type: v1.NodeMemoryPressure, Status: v1.ConditionFalse, Reason: "KubeletHasSufficientMemory"},
				{Type: v1.NodeReady, Status: v1.ConditionTrue, Reason: "KubeletReady", LastTransitionTime: metav1.NewTime(testNow.Add(-time.Hour))},
			},
			NodeInfo:  v1.NodeSystemInfo{KubeletVersion: "v1.33.4", ContainerRuntimeVersion: "containerd://1.6.20", KernelVersion: "6.1.0"},
			Addresses: []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "192.0.2.10"}},
		},
	}
}

// testHandler serves two pods, a node, one timeline, one sample and one event.
func testHandler(t *testing.T, node *v1.Node) http.Handler {
	t.Helper()
	rec := timeline.New()
	web := testPods()[0]
	rec.Record(web, timeline.Step{Name: timeline.Admitted})
	rec.Record(web, timeline.Step{Name: timeline.SandboxCreated, Call: "RunPodSandbox"})
	sampler := NewSampler(nil, 15*time.Second, time.Hour)
	sampler.record(summaryOf(250, map[string]uint64{"u-web": 12}), testNow)
	events := NewEvents(10)
	events.Add(podEvent("crash", "BackOff", "Back-off restarting failed container", testNow))
	return NewHandler(Deps{
		NodeName: "node-a", Standalone: true,
		Node: func(context.Context) *v1.Node { return node },
		Pods: testPods, Timeline: rec.Handler(), Stats: sampler, Events: events,
		Now: func() time.Time { return testNow },
	})
}

func get(t *testing.T, h http.Handler, method, path string) *httptest.ResponseRecorder {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, path, nil))
	return rec
}

func decode[T any](t *testing.T, rec *httptest.ResponseRecorder) T {
	t.Helper()
	var v T
	if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != "application/json" {
		t.Fatalf("%d %q: %s", rec.Code, rec.Header().Get("Content-Type"), rec.Body)
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &v); err != nil {
		t.Fatalf("%v: %s", err, rec.Body)
	}
	return v
}

func TestPageAndAssetsUseRelativeURLs(t *testing.T) {
	h := testHandler(t, testNode())
	rec := get(t, h, "GET", "/ui/")
	body := rec.Body.String()
	if rec.Code != http.StatusOK || !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/html") || !strings.Contains(body, `id="waterfall"`) {
		t.Fatalf("page: %d %q", rec.Code, rec.Header().Get("Content-Type"))
	}
	if rec.Header().Get("Content-Security-Policy") == "" {
		t.Error("the page has no content security policy")
	}
	// Absolute URLs would break behind the API server's node proxy.
	for _, m := range regexp.MustCompile(`(?:src|href)="([^"]*)"`).FindAllStringSubmatch(body, -1) {
		if strings.HasPrefix(m[1], "data:") {
			continue // inline, no request
		}
		if strings.HasPrefix(m[1], "/") || strings.Contains(m[1], "://") {
			t.Errorf("the page links %q, which is not relative", m[1])
		}
		if asset := get(t, h, "GET", "/ui/"+m[1]); asset.Code != http.StatusOK || asset.Body.Len() == 0 {
			t.Errorf("asset %s: %d", m[1], asset.Code)
		}
	}
	js := get(t, h, "GET", "/ui/static/app.js").Body.String()
	for _, m := range regexp.MustCompile(`(?:getJSON|fetch)\("([^"]*)`).FindAllStringSubmatch(js, -1) {
		if strings.HasPrefix(m[1], "/") {
			t.Errorf("the script fetches %q, which is not relative", m[1])
		}
	}
	if rec := get(t, h, "GET", "/ui"); rec.Code != http.StatusMovedPermanently || rec.Header().Get("Location") != "ui/" {
		t.Errorf("/ui: %d to %q, want a relative redirect to ui/", rec.Code, rec.Header().Get("Location"))
	}
	if rec := get(t, h, "POST", "/ui/api/pods"); rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST: %d, want 405", rec.Code)
	}
}

func TestNodeSummary(t *testing.T) {
	got := decode[nodeView](t, get(t, testHandler(t, testNode()), "GET", "/ui/api/node"))
	if got.Name != "node-a" || !got.Known || got.Mode != "standalone" || got.Version != version.String() ||
		got.Runtime != "containerd://1.6.20" || got.Kubelet != "v1.33.4" || !got.Now.Equal(testNow) {
		t.Errorf("node %+v", got)
	}
	if len(got.Resources) != 3 || got.Resources[0] != (resourceView{Name: "cpu", Capacity: "4", Allocatable: "3500m", CapacityValue: 4000, AllocatableValue: 3500}) ||
		got.Resources[1].Name != "memory" || got.Resources[1].CapacityValue != 8<<30 {
		t.Errorf("resources %+v", got.Resources)
	}
	if len(got.Conditions) != 2 || got.Conditions[1].Type != "Ready" || got.Conditions[1].Status != "True" || !got.Conditions[1].Since.Equal(testNow.Add(-time.Hour)) {
		t.Errorf("conditions %+v", got.Conditions)
	}

	// A cluster-mode node before registration is named but not known.
	got = decode[nodeView](t, get(t, testHandler(t, nil), "GET", "/ui/api/node"))
	if got.Name != "node-a" || got.Known || got.Resources == nil || got.Conditions == nil {
		t.Errorf("unregistered node %+v", got)
	}
}

func TestPodsList(t *testing.T) {
	got := decode[podsView](t, get(t, testHandler(t, testNode()), "GET", "/ui/api/pods"))
	if len(got.Pods) != 2 || got.Pods[0].Name != "crash" || got.Pods[1].Name != "web" || !got.Now.Equal(testNow) {
		t.Fatalf("pods %+v, want crash then web", got.Pods)
	}
	crash, web := got.Pods[0], got.Pods[1]
	if crash.Status != "CrashLoopBackOff" || crash.Ready || crash.ReadyCount != "1/2" || crash.Restarts != 4 || crash.Phase != "Running" {
		t.Errorf("crash-looping pod %+v", crash)
	}
	if c := crash.Containers[0]; c.State != "waiting" || c.Reason != "CrashLoopBackOff" || c.Message != "back-off 40s" || c.Restarts != 3 {
		t.Errorf("crash-looping container %+v", c)
	}
	if web.Status != "Running" || !web.Ready || web.ReadyCount != "1/1" || web.IP != "10.85.0.7" || web.QOS != "BestEffort" ||
		web.Started == nil || !web.Started.Equal(testNow.Add(-time.Minute)) || web.Containers[0].State != "running" {
		t.Errorf("ready pod %+v", web)
	}
}

func TestPodStatusText(t *testing.T) {
	deleting := metav1.NewTime(testNow)
	cases := []struct {
		pod  v1.Pod
		want string
	}{
		{v1.Pod{}, "Pending"},
		{v1.Pod{Status: v1.PodStatus{Phase: v1.PodFailed, Reason: "Evicted"}}, "Evicted"},
		{v1.Pod{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &deleting}, Status: v1.PodStatus{Phase: v1.PodRunning}}, "Terminating"},
		{v1.Pod{Status: v1.PodStatus{Phase: v1.PodPending, InitContainerStatuses: []v1.ContainerStatus{
			{State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{Reason: "Error", ExitCode: 2}}}}}}, "Error"},
		{v1.Pod{Status: v1.PodStatus{Phase: v1.PodPending, ContainerStatuses: []v1.ContainerStatus{
			{State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "ContainerCreating"}}}}}}, "ContainerCreating"},
		{v1.Pod{Status: v1.PodStatus{Phase: v1.PodSucceeded, ContainerStatuses: []v1.ContainerStatus{
			{State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{Reason: "Completed"}}}}}}, "Succeeded"},
	}
	for _, tc := range cases {
		if got := podStatusText(&tc.pod); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.pod.Status, got, tc.want)
		}
	}
}

func TestTimelineStatsAndEvents(t *testing.T) {
	h := testHandler(t, testNode())
	tl := decode[timeline.Timeline](t, get(t, h, "GET", "/ui/api/pods/default/web/timeline"))
	if len(tl.Steps) != 2 || tl.Steps[0].Name != timeline.Admitted || tl.Steps[1].Call != "RunPodSandbox" {
		t.Errorf("timeline %+v", tl)
	}
	if rec := get(t, h, "GET", "/ui/api/pods/default/nope/timeline"); rec.Code != http.StatusNotFound {
		t.Errorf("unknown pod's timeline: %d", rec.Code)
	}

	stats := decode[struct {
		Times []int64 `json:"times"`
		Node  struct {
			CPU []float64 `json:"cpuMillicores"`
		} `json:"node"`
		Pods []struct {
			UID string    `json:"uid"`
			Mem []float64 `json:"memoryBytes"`
		} `json:"pods"`
	}](t, get(t, h, "GET", "/ui/api/stats"))
	if len(stats.Times) != 1 || stats.Times[0] != testNow.Unix() || stats.Node.CPU[0] != 250 ||
		len(stats.Pods) != 1 || stats.Pods[0].UID != "u-web" || stats.Pods[0].Mem[0] != 12<<20 {
		t.Errorf("stats %+v", stats)
	}

	events := decode[struct {
		Now    time.Time `json:"now"`
		Events []Event   `json:"events"`
	}](t, get(t, h, "GET", "/ui/api/events"))
	if !events.Now.Equal(testNow) || len(events.Events) != 1 || events.Events[0].Reason != "BackOff" || events.Events[0].Name != "crash" {
		t.Errorf("events %+v", events)
	}
}
