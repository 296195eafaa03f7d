package app

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"

	"github.com/nodelet/nodelet/internal/testutil"
)

// podResourcesClient dials the node's pod-resources socket under the manifests' root dir.
func podResourcesClient(t *testing.T, manifests string) podresourcesv1.PodResourcesListerClient {
	t.Helper()
	sock := filepath.Join(filepath.Dir(manifests), "root", "pod-resources", "kubelet.sock")
	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return podresourcesv1.NewPodResourcesListerClient(conn)
}

func TestPodResourcesListsTheNodesPods(t *testing.T) {
	fake, manifests := startNode(t)
	writePod(t, manifests, "web", "Always")
	testutil.Eventually(t, "web running", func() bool { return running(fake, "web") != nil })
	client := podResourcesClient(t, manifests)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := client.List(ctx, &podresourcesv1.ListPodResourcesRequest{}, grpc.WaitForReady(true))
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.PodResources) != 1 {
		t.Fatalf("List = %v, want the one pod", resp.PodResources)
	}
	pod := resp.PodResources[0]
	if pod.Name != "web-node1" || pod.Namespace != "default" || len(pod.Containers) != 1 || pod.Containers[0].Name != "c" {
		t.Errorf("List reported %v, want default/web-node1 with container c", pod)
	}
	// Off by default, as upstream's KubeletPodResourcesGet gate.
	_, err = client.Get(ctx, &podresourcesv1.GetPodResourcesRequest{PodNamespace: "default", PodName: "web-node1"})
	if status.Convert(err).Message() != "PodResources API Get method disabled" {
		t.Errorf("Get with the gate off: %v", err)
	}
}

func TestPodResourcesGetWithItsGate(t *testing.T) {
	cfg, fake, manifests := testConfig(t)
	cfg.PodResourcesGet = true
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, cfg) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	writePod(t, manifests, "web", "Always")
	testutil.Eventually(t, "web running", func() bool { return running(fake, "web") != nil })

	callCtx, callCancel := context.WithTimeout(ctx, 10*time.Second)
	defer callCancel()
	resp, err := podResourcesClient(t, manifests).Get(callCtx,
		&podresourcesv1.GetPodResourcesRequest{PodNamespace: "default", PodName: "web-node1"}, grpc.WaitForReady(true))
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.PodResources; got.Name != "web-node1" || len(got.Containers) != 1 {
		t.Errorf("Get = %v, want web-node1 with its container", got)
	}
}
