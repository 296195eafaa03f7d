package cri

import (
	"context"
	"testing"

	"github.com/nodelet/nodelet/internal/lib/metrics/metricstest"
	"github.com/nodelet/nodelet/internal/runtime/cri/fakecri"
)

func TestOperationNamesAreTheKubelets(t *testing.T) {
	for method, want := range map[string]string{
		"/runtime.v1.RuntimeService/RunPodSandbox":            "run_podsandbox",
		"/runtime.v1.RuntimeService/PodSandboxStatus":         "podsandbox_status",
		"/runtime.v1.RuntimeService/ListPodSandboxStats":      "list_podsandbox_stats",
		"/runtime.v1.RuntimeService/ListContainerStats":       "list_container_stats",
		"/runtime.v1.RuntimeService/UpdateContainerResources": "update_container",
		"/runtime.v1.RuntimeService/ExecSync":                 "exec_sync",
		"/runtime.v1.ImageService/ImageFsInfo":                "image_fs_info",
		"/runtime.v1.ImageService/PullImage":                  "pull_image",
		"/runtime.v1.RuntimeService/Version":                  "version",
	} {
		if got := operationName(method); got != want {
			t.Errorf("operationName(%s) = %q, want %q", method, got, want)
		}
	}
}

func TestDialledCallsAreCountedWithTheirErrors(t *testing.T) {
	_, endpoint := fakecri.Start(t)
	client, err := Connect(endpoint, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	listed := func() float64 { return counter(t, "kubelet_runtime_operations_total", "list_podsandbox") }
	failed := func() float64 { return counter(t, "kubelet_runtime_operations_errors_total", "container_status") }
	calls, errs := listed(), failed()
	if _, err := client.ListPodSandbox(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := client.ContainerStatus(context.Background(), "missing"); err == nil {
		t.Fatal("want NotFound")
	}
	if got := listed(); got != calls+1 {
		t.Errorf("list_podsandbox operations %v, want %v", got, calls+1)
	}
	if got := failed(); got != errs+1 {
		t.Errorf("container_status errors %v, want %v", got, errs+1)
	}
}

// counter reads the counter name{operation_type=op} from nodelet's registry (0 if absent).
func counter(t *testing.T, name, op string) float64 {
	t.Helper()
	v, _ := metricstest.Value(t, name, map[string]string{"operation_type": op})
	return v
}
