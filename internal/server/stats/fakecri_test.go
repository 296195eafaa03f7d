package stats

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/flowcontrol"

	"github.com/nodelet/nodelet/internal/runtime/container"
	"github.com/nodelet/nodelet/internal/runtime/cri"
	"github.com/nodelet/nodelet/internal/runtime/cri/fakecri"
	"github.com/nodelet/nodelet/internal/runtime/kuberuntime"
)

// TestSummaryOverFakeCRI runs the real runtime manager against the fake CRI: a pod started
// through SyncPod shows in the summary with the usage the runtime reports.
func TestSummaryOverFakeCRI(t *testing.T) {
	fake, endpoint := fakecri.Start(t)
	fake.AddImage("busybox")
	dir := t.TempDir()
	client, err := cri.Connect(endpoint, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	mgr, err := kuberuntime.NewManager(kuberuntime.Options{
		CRI: client, RootDir: dir + "/root", PodLogsDir: dir + "/logs", Recorder: record.NewFakeRecorder(100),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	pod := testPod("web", "app")
	pod.Spec.Containers[0].ImagePullPolicy = v1.PullNever
	st, _ := mgr.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
	if res := mgr.SyncPod(ctx, pod, st, flowcontrol.NewBackOff(time.Second, time.Second)); res.Err != nil {
		t.Fatal(res.Err)
	}
	st, _ = mgr.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
	app := st.FindContainer("app")
	fake.SetUsage(app.ID, fakecri.Usage{CPUCoreNanoSeconds: 42e9, WorkingSetBytes: 7 << 20, WritableBytes: 4096, WritableInodes: 2})

	p := NewSummaryProvider(Deps{
		NodeName: "node-1", Runtime: client, RootDir: dir + "/root", PodLogsDir: dir + "/logs",
		Host:      fakeHost(t),
		Pods:      func() []*v1.Pod { return []*v1.Pod{pod} },
		PodStatus: func(uid types.UID) (*container.PodStatus, bool) { return st, uid == pod.UID },
	})
	fake.ResetCalls()
	s, err := p.Summary(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c := findPod(t, s, "web").Containers
	if len(c) != 1 || u64(c[0].CPU.UsageCoreNanoSeconds) != 42e9 || u64(c[0].Memory.WorkingSetBytes) != 7<<20 ||
		u64(c[0].Rootfs.UsedBytes) != 4096 {
		t.Fatalf("containers %+v", c)
	}
	if n := fake.CountCalls("ListContainerStats"); n != 1 {
		t.Errorf("ListContainerStats called %d times", n)
	}
}
