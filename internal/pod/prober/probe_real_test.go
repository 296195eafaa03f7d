//go:build real

package prober

// Probes against a real CRI runtime. They run only when NODELET_E2E_CRI names its endpoint:
//
//	NODELET_E2E_CRI=unix:///run/nodelet/containerd/containerd.sock go test -tags real ./internal/pod/prober -run Real
//
// They need root, the CNI bridge (pod IPs reachable from the host) and the images
// nodelet.local/testhelper:v1, nodelet.local/busybox:1.36 and registry.k8s.io/pause:3.10.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/utils/ptr"

	"github.com/nodelet/nodelet/internal/pod/status"
	"github.com/nodelet/nodelet/internal/podspec/podutil"
	"github.com/nodelet/nodelet/internal/runtime/cri"
	noderuntime "github.com/nodelet/nodelet/internal/runtime/kuberuntime"
	"github.com/nodelet/nodelet/internal/testutil"
)

// eventLog is an EventRecorder keeping "Type Reason Message" lines.
type eventLog struct {
	mu     sync.Mutex
	events []string
}

func (e *eventLog) Event(_ runtime.Object, typ, reason, msg string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.events = append(e.events, typ+" "+reason+" "+msg)
}

func (e *eventLog) Eventf(o runtime.Object, typ, reason, format string, args ...any) {
	e.Event(o, typ, reason, fmt.Sprintf(format, args...))
}

func (e *eventLog) AnnotatedEventf(o runtime.Object, _ map[string]string, typ, reason, format string, args ...any) {
	e.Eventf(o, typ, reason, format, args...)
}

func (e *eventLog) all() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.events...)
}

func (e *eventLog) has(prefix string) bool { return hasEvent(e.all(), prefix) }

// realNode is a minimal kubelet around the prober: it syncs one pod whenever the prober asks
// and every 500ms, and keeps the computed status the workers read.
type realNode struct {
	t      *testing.T
	rt     *noderuntime.Manager
	cri    *cri.Client
	prober *Manager
	events *eventLog
	pod    *v1.Pod

	mu     sync.Mutex
	status v1.PodStatus
	synced bool
}

func startRealNode(t *testing.T, pod *v1.Pod) *realNode {
	client := testutil.RealCRI(t)
	events := &eventLog{}
	rt, err := noderuntime.NewManager(noderuntime.Options{
		CRI: client, RootDir: t.TempDir(), PodLogsDir: "/var/log/pods", Recorder: events, NodeName: "e2e-prober",
	})
	if err != nil {
		t.Fatal(err)
	}
	n := &realNode{t: t, rt: rt, cri: client, events: events, pod: pod}
	n.prober = New(Deps{
		Exec: client.ExecSync, Kill: rt.KillContainer,
		Status: n.getStatus, Recorder: events,
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() {
		cancel()
		<-done
		n.prober.RemovePod(pod)
		cctx, ccancel := context.WithTimeout(context.Background(), time.Minute)
		defer ccancel()
		_ = rt.KillPod(cctx, pod, nil, 0)
		_ = rt.RemovePod(cctx, pod.UID)
		client.Close()
	})
	go n.loop(ctx, done)
	proberDone := make(chan error)
	go func() { proberDone <- n.prober.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-proberDone })
	return n
}

func (n *realNode) getStatus(uid types.UID) (v1.PodStatus, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.status, n.synced && uid == n.pod.UID
}

func (n *realNode) loop(ctx context.Context, done chan struct{}) {
	defer close(done)
	backoff := flowcontrol.NewBackOff(time.Second, 10*time.Second)
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		n.sync(ctx, backoff)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-n.prober.Updates():
		}
	}
}

// sync does what the pod syncer does: read the runtime, compute the status (readiness from
// the prober), start probes, converge.
func (n *realNode) sync(ctx context.Context, backoff *flowcontrol.Backoff) {
	rs, err := n.rt.GetPodStatus(ctx, n.pod.UID, n.pod.Name, n.pod.Namespace)
	if err != nil {
		n.t.Logf("GetPodStatus: %v", err)
		return
	}
	n.prober.AddPod(n.pod)
	st := status.Compute(status.Input{
		Pod: n.pod, Runtime: rs, RuntimeName: "containerd", Now: metav1.Now(),
		Ready:   func(name, id string) bool { return n.prober.Ready(n.pod, name, id) },
		Started: func(name, id string) bool { return n.prober.Started(n.pod, name, id) },
	})
	n.mu.Lock()
	n.status, n.synced = st, true
	n.mu.Unlock()
	if st.Phase == v1.PodSucceeded || st.Phase == v1.PodFailed {
		return
	}
	if res := n.rt.SyncPod(ctx, n.pod, rs, backoff); res.Err != nil && ctx.Err() == nil {
		n.t.Logf("SyncPod: %v", res.Err)
	}
}

// container returns the status of the pod's (only) app container.
func (n *realNode) container() v1.ContainerStatus {
	n.mu.Lock()
	defer n.mu.Unlock()
	if len(n.status.ContainerStatuses) == 0 {
		return v1.ContainerStatus{}
	}
	return n.status.ContainerStatuses[0]
}

func (n *realNode) exec(id string, cmd ...string) {
	n.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, errOut, code, err := n.cri.ExecSync(ctx, podutil.BareContainerID(id), cmd, 10*time.Second)
	if err != nil || code != 0 {
		n.t.Fatalf("exec %q: exit %d err %v: %s%s", cmd, code, err, out, errOut)
	}
}

func realProbePod(prefix string, c v1.Container, policy v1.RestartPolicy) *v1.Pod {
	suffix := make([]byte, 4)
	_, _ = rand.Read(suffix)
	id := hex.EncodeToString(suffix)
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: prefix + "-" + id, Namespace: "default", UID: types.UID("e2e-" + id + "-uid")},
		Spec: v1.PodSpec{Containers: []v1.Container{c}, RestartPolicy: policy,
			TerminationGracePeriodSeconds: ptr.To[int64](5)},
	}
}

func TestRealReadinessAndLiveness(t *testing.T) {
	c := v1.Container{
		Name: "app", Image: "nodelet.local/testhelper:v1", ImagePullPolicy: v1.PullIfNotPresent,
		Args:  []string{"serve", "--port", "8080"},
		Ports: []v1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: v1.ProtocolTCP}},
		ReadinessProbe: &v1.Probe{
			ProbeHandler:  v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Path: "/ready", Port: intstr.FromString("http")}},
			PeriodSeconds: 1, FailureThreshold: 1,
		},
		LivenessProbe: &v1.Probe{
			ProbeHandler:  v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"sh", "-c", "test ! -e /tmp/dead"}}},
			PeriodSeconds: 1, FailureThreshold: 2, TerminationGracePeriodSeconds: ptr.To[int64](1),
		},
	}
	pod := realProbePod("probes", c, v1.RestartPolicyAlways)
	n := startRealNode(t, pod)

	testutil.WaitUntil(t, 60*time.Second, "the container to become ready", func() bool { return n.container().Ready })
	first := n.container()
	t.Logf("ready: %s", first.ContainerID)

	n.exec(first.ContainerID, "touch", "/tmp/notready")
	testutil.WaitUntil(t, 15*time.Second, "readiness to turn false", func() bool { return !n.container().Ready })
	if !n.events.has("Warning Unhealthy Readiness probe failed: HTTP probe failed with statuscode: 503") {
		t.Errorf("no Unhealthy event for readiness; events %q", n.events.all())
	}
	n.exec(first.ContainerID, "rm", "/tmp/notready")
	testutil.WaitUntil(t, 15*time.Second, "readiness to come back", func() bool { return n.container().Ready })

	n.exec(first.ContainerID, "touch", "/tmp/dead")
	testutil.WaitUntil(t, 60*time.Second, "the container to be killed and restarted", func() bool {
		cs := n.container()
		return cs.ContainerID != first.ContainerID && cs.State.Running != nil && cs.RestartCount == 1
	})
	for _, want := range []string{"Warning Unhealthy Liveness probe failed", "Normal Killing Container app failed liveness probe, will be restarted"} {
		if !n.events.has(want) {
			t.Errorf("no %q event; events %q", want, n.events.all())
		}
	}
	testutil.WaitUntil(t, 30*time.Second, "the restarted container to become ready", func() bool { return n.container().Ready })
	t.Logf("events:\n%s", strings.Join(n.events.all(), "\n"))
}

func TestRealFailingLivenessKills(t *testing.T) {
	c := v1.Container{
		Name: "app", Image: "nodelet.local/busybox:1.36", ImagePullPolicy: v1.PullIfNotPresent,
		Command: []string{"sleep", "3600"},
		LivenessProbe: &v1.Probe{
			ProbeHandler:  v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"false"}}},
			PeriodSeconds: 1, FailureThreshold: 1, TerminationGracePeriodSeconds: ptr.To[int64](2),
		},
	}
	pod := realProbePod("liveness", c, v1.RestartPolicyNever)
	n := startRealNode(t, pod)
	testutil.WaitUntil(t, 60*time.Second, "the container to be killed", func() bool { return n.container().State.Terminated != nil })
	term := n.container().State.Terminated
	t.Logf("terminated: exit %d reason %s after %v", term.ExitCode, term.Reason, term.FinishedAt.Sub(term.StartedAt.Time))
	if term.ExitCode == 0 {
		t.Errorf("exit code 0, want a kill signal's")
	}
	if !n.events.has("Normal Killing Container app failed liveness probe, will be restarted") {
		t.Errorf("no Killing event; events %q", n.events.all())
	}
	testutil.WaitUntil(t, 10*time.Second, "the workers to stop", func() bool {
		n.prober.mu.Lock()
		defer n.prober.mu.Unlock()
		return len(n.prober.workers) == 0
	})
	if strings.Contains(strings.Join(n.events.all(), "\n"), "probe errored") {
		t.Errorf("probe errors: %q", n.events.all())
	}
}
