//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"

	"github.com/nodelet/nodelet/internal/testutil"
)

// A pod with a sidecar, an init container that runs to completion and two app containers.
var podResourcesPod = fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: res
spec:
  terminationGracePeriodSeconds: 1
  initContainers:
  - {name: setup, image: %[1]s, imagePullPolicy: IfNotPresent, command: ["true"]}
  - {name: proxy, image: %[1]s, imagePullPolicy: IfNotPresent, restartPolicy: Always, command: ["sleep", "3600"]}
  containers:
  - {name: app, image: %[1]s, imagePullPolicy: IfNotPresent, command: ["sleep", "3600"]}
  - {name: logger, image: %[1]s, imagePullPolicy: IfNotPresent, command: ["sleep", "3600"]}
`, busybox)

// The pod-resources API on <root-dir>/pod-resources/kubelet.sock, read with the real v1 client:
// List names a running pod's long-running containers (sidecar first, the completed init
// container left out), Get finds it with its gate on, GetAllocatableResources answers, and a
// nodelet killed with its socket left behind serves the API again when it comes back.
func TestPodResourcesAPI(t *testing.T) {
	cfgFile := filepath.Join(t.TempDir(), "kubelet.yaml")
	if err := os.WriteFile(cfgFile, []byte("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"+
		"featureGates: {KubeletPodResourcesGet: true}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	n := startNodelet(t, "--config="+cfgFile)
	n.writeManifest("res.yaml", podResourcesPod)
	waitRunning(t, "res", "logger", 90*time.Second)
	waitRunning(t, "res", "app", 10*time.Second)

	sock := filepath.Join(n.rootDir, "pod-resources", "kubelet.sock")
	client := dialPodResources(t, sock)
	wantContainers := []string{"proxy", "app", "logger"}
	assertListed(t, client, "res-"+nodeName, wantContainers)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	got, err := client.Get(ctx, &podresourcesv1.GetPodResourcesRequest{PodNamespace: "default", PodName: "res-" + nodeName})
	if err != nil {
		t.Fatalf("Get with KubeletPodResourcesGet on: %v", err)
	}
	if names := containerNames(got.PodResources); !slices.Equal(names, wantContainers) {
		t.Errorf("Get: containers %v, want %v", names, wantContainers)
	}
	_, err = client.Get(ctx, &podresourcesv1.GetPodResourcesRequest{PodNamespace: "default", PodName: "nope"})
	if msg := status.Convert(err).Message(); msg != "pod nope in namespace default not found" {
		t.Errorf("Get of a missing pod: %v", err)
	}
	if _, err := client.GetAllocatableResources(ctx, &podresourcesv1.AllocatableResourcesRequest{}); err != nil {
		t.Errorf("GetAllocatableResources: %v", err)
	}

	// Killed, nodelet leaves its socket; the next one replaces it and reports the adopted pod.
	n.stop(syscall.SIGKILL)
	if _, err := os.Stat(sock); err != nil {
		t.Fatalf("socket after SIGKILL: %v (the restart would not prove a stale socket is replaced)", err)
	}
	n.start()
	assertListed(t, dialPodResources(t, sock), "res-"+nodeName, wantContainers)
}

func dialPodResources(t *testing.T, sock string) podresourcesv1.PodResourcesListerClient {
	t.Helper()
	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return podresourcesv1.NewPodResourcesListerClient(conn)
}

// assertListed waits until List reports the pod (in namespace default) with those containers:
// a nodelet that just started may not have read its manifests yet.
func assertListed(t *testing.T, client podresourcesv1.PodResourcesListerClient, pod string, containers []string) {
	t.Helper()
	testutil.WaitFor(t, 30*time.Second, "List reporting "+pod, func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		resp, err := client.List(ctx, &podresourcesv1.ListPodResourcesRequest{}, grpc.WaitForReady(true))
		if err != nil {
			return false, err.Error()
		}
		for _, p := range resp.PodResources {
			if p.Namespace == "default" && p.Name == pod {
				names := containerNames(p)
				return slices.Equal(names, containers), fmt.Sprintf("containers %v, want %v", names, containers)
			}
		}
		return false, fmt.Sprintf("pods %v", resp.PodResources)
	})
}

func containerNames(p *podresourcesv1.PodResources) []string {
	var names []string
	for _, c := range p.Containers {
		names = append(names, c.Name)
	}
	return names
}
