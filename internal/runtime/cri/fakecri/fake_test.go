package fakecri

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestLifecycleOverGRPC(t *testing.T) {
	f, endpoint := Start(t)
	conn, err := grpc.NewClient(endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	rt := runtimeapi.NewRuntimeServiceClient(conn)
	ctx := context.Background()
	f.AddImage("img:1")

	sbCfg := &runtimeapi.PodSandboxConfig{
		Metadata: &runtimeapi.PodSandboxMetadata{Name: "p", Namespace: "ns", Uid: "u"},
		Labels:   map[string]string{"pod": "p"},
	}
	sb, err := rt.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: sbCfg})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rt.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: sbCfg}); err == nil {
		t.Error("same sandbox name and attempt accepted twice")
	}
	st, err := rt.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: sb.PodSandboxId})
	if err != nil || st.Status.Network.Ip == "" || st.Status.State != runtimeapi.PodSandboxState_SANDBOX_READY {
		t.Fatalf("sandbox status %+v %v", st, err)
	}

	ctrCfg := &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: "c"}, Image: &runtimeapi.ImageSpec{Image: "img:1"},
		Labels: map[string]string{"pod": "p"},
	}
	if _, err := rt.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: sb.PodSandboxId,
		Config: &runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: "x"}, Image: &runtimeapi.ImageSpec{Image: "absent"}}}); err == nil {
		t.Error("container created from a missing image")
	}
	c, err := rt.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: sb.PodSandboxId, Config: ctrCfg})
	if err != nil {
		t.Fatal(err)
	}
	f.FailNext("StartContainer", errors.New("boom"))
	if _, err := rt.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: c.ContainerId}); err == nil {
		t.Fatal("injected failure not returned")
	}
	if _, err := rt.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: c.ContainerId}); err != nil {
		t.Fatal(err)
	}
	if err := f.ExitContainer(c.ContainerId, 3); err != nil {
		t.Fatal(err)
	}
	cs, err := rt.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: c.ContainerId})
	if err != nil || cs.Status.State != runtimeapi.ContainerState_CONTAINER_EXITED || cs.Status.ExitCode != 3 ||
		cs.Status.Reason != "Error" || cs.Status.FinishedAt < cs.Status.StartedAt || cs.Status.ImageRef != ImageID("img:1") {
		t.Fatalf("container status %+v %v", cs, err)
	}
	list, err := rt.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{
		LabelSelector: map[string]string{"pod": "p"},
		State:         &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_EXITED}}})
	if err != nil || len(list.Containers) != 1 {
		t.Fatalf("filtered list %+v %v", list, err)
	}

	if _, err := rt.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: sb.PodSandboxId}); err == nil {
		t.Error("ready sandbox removed")
	}
	if _, err := rt.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: sb.PodSandboxId}); err != nil {
		t.Fatal(err)
	}
	if _, err := rt.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: sb.PodSandboxId}); err != nil {
		t.Fatal(err)
	}
	if len(f.Sandboxes())+len(f.Containers()) != 0 {
		t.Error("sandbox removal left state behind")
	}
	want := []string{"RunPodSandbox", "RunPodSandbox", "PodSandboxStatus", "CreateContainer", "CreateContainer",
		"StartContainer", "StartContainer", "ContainerStatus", "ListContainers", "RemovePodSandbox", "StopPodSandbox", "RemovePodSandbox"}
	if got := f.Calls(); !reflect.DeepEqual(got, want) {
		t.Errorf("calls %v, want %v", got, want)
	}
}
