package kuberuntime

import (
	"context"
	"testing"

	"github.com/nodelet/nodelet/internal/runtime/container"
	"github.com/nodelet/nodelet/internal/runtime/cri/fakecri"
)

func TestListContainerStatsIsOneCallWithUsageOfRunningContainers(t *testing.T) {
	e := newTestEnv(t)
	pod := newPod("web", ctr("app", "serve"), ctr("side", "sleep"))
	if res := e.sync(pod); res.Err != nil {
		t.Fatal(res.Err)
	}
	app, side := e.running("app"), e.running("side")
	e.fake.SetUsage(app.ID, fakecri.Usage{CPUCoreNanoSeconds: 5e9, WorkingSetBytes: 1 << 20, WritableBytes: 4096, WritableInodes: 3})
	e.exit("side", 0)
	e.fake.ResetCalls()

	stats, err := e.mgr.cri.ListContainerStats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if n := e.fake.CountCalls("ListContainerStats"); n != 1 || len(e.fake.Calls()) != 1 {
		t.Fatalf("CRI calls %v, want one ListContainerStats", e.fake.Calls())
	}
	byID := map[string]int{}
	for i, s := range stats {
		byID[s.GetAttributes().GetId()] = i
	}
	a, ok := byID[app.ID]
	if !ok || len(stats) != 2 {
		t.Fatalf("stats for %d containers, want app and side: %v", len(stats), stats)
	}
	got := stats[a]
	if got.GetAttributes().GetLabels()[container.LabelPodUID] != string(pod.UID) || got.GetAttributes().GetMetadata().GetName() != "app" {
		t.Errorf("attributes %+v lack the pod UID label or container name", got.GetAttributes())
	}
	if got.GetCpu().GetUsageCoreNanoSeconds().GetValue() != 5e9 || got.GetMemory().GetWorkingSetBytes().GetValue() != 1<<20 {
		t.Errorf("usage cpu %v memory %v", got.GetCpu(), got.GetMemory())
	}
	if got.GetWritableLayer().GetUsedBytes().GetValue() != 4096 || got.GetWritableLayer().GetInodesUsed().GetValue() != 3 {
		t.Errorf("writable layer %v", got.GetWritableLayer())
	}
	if exited := stats[byID[side.ID]]; exited.GetCpu() != nil || exited.GetMemory() != nil || exited.GetWritableLayer() == nil {
		t.Errorf("exited container should carry only its writable layer: %v", exited)
	}
}

func TestImageFsInfoAndSandboxPIDOverFake(t *testing.T) {
	e := newTestEnv(t)
	pod := newPod("web", ctr("app", "serve"))
	if res := e.sync(pod); res.Err != nil {
		t.Fatal(res.Err)
	}
	ctx := context.Background()
	if _, err := e.mgr.cri.ImageFsInfo(ctx); err != nil {
		t.Fatalf("ImageFsInfo: %v", err)
	}
	// The fake's verbose status carries no info: no pid, no error.
	pid, err := e.mgr.cri.SandboxPID(ctx, e.status(pod).Sandboxes[0].ID)
	if err != nil || pid != 0 {
		t.Fatalf("SandboxPID = %d, %v; want 0, nil", pid, err)
	}
	if _, err := e.mgr.cri.SandboxPID(ctx, "missing"); err == nil {
		t.Fatal("SandboxPID of a missing sandbox should fail")
	}
}
