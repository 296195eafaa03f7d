//go:build guestvm

package inguest

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/nodelet/nodelet/internal/testutil"
)

// TestInPlaceResizeOnV2 joins the kubelet (cgroupDriver systemd) to the guest's control plane
// and resizes two running API pods through the resize subresource, as upstream 1.33 allows:
//   - a Guaranteed pod's cpu 200m→300m and memory 64Mi→96Mi, in place: its pod slice's cpu.max,
//     cpu.weight and memory.max (and systemd's own properties of the slice, or a daemon-reload
//     would undo them) and its container scope's, the same container still running;
//   - a Burstable pod's cpu request 100m→250m and limit 200m→400m, in place;
//   - a memory limit decrease: refused by the API server with the NotRequired policy (1.33
//     forbids it), and with memory's RestartContainer policy taken below what the Burstable
//     container uses (100Mi held, limit 128Mi→64Mi) by restarting the container under the new
//     limit, the pod slice's memory.max lowered once the old instance is gone.
//
// Each step waits for the pod's status to show the new resources (resources and
// allocatedResources, no PodResizePending or PodResizeInProgress condition) and then reads the
// guest's cgroup files.
func TestInPlaceResizeOnV2(t *testing.T) {
	useDriver(t, "systemd")
	cs, kubeconfig := startControlPlane(t)
	joinKubelet(t, cs, kubeconfig, "cgroupDriver: systemd\n", "guaranteed", "burstable")
	ctx := context.Background()
	pods := cs.CoreV1().Pods("default")

	hold := "[ -e /data/held ] && exec sleep 3600; touch /data/held; dd if=/dev/zero bs=100M count=1 | sleep 3600"
	for _, p := range []*v1.Pod{
		resizablePod("guaranteed", "sleep 3600", cpuMem("200m", "64Mi"), cpuMem("200m", "64Mi"), false),
		resizablePod("burstable", hold, cpuMem("100m", "32Mi"), cpuMem("200m", "128Mi"), true),
	} {
		if _, err := pods.Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	g := waitAPIPod(t, cs, "guaranteed", "running", runningMain)
	b := waitAPIPod(t, cs, "burstable", "running", runningMain)
	gSlice := "/kubepods.slice/kubepods-pod" + sliceUID(g) + ".slice"
	bSlice := "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + sliceUID(b) + ".slice"
	bScope := containerCgroup(t, b)
	testutil.WaitFor(t, podTimeout, "the burstable container holding 100Mi", func() (bool, string) {
		cur := readCgroup(t, bScope, "memory.current")
		n, _ := strconv.ParseInt(cur, 10, 64)
		return n >= 100<<20, "memory.current " + cur
	})

	// cpu and memory up, in place.
	gWant := v1.ResourceRequirements{Requests: cpuMem("300m", "96Mi"), Limits: cpuMem("300m", "96Mi")}
	bWant := v1.ResourceRequirements{Requests: cpuMem("250m", "32Mi"), Limits: cpuMem("400m", "128Mi")}
	resizePod(t, cs, "guaranteed", gWant)
	resizePod(t, cs, "burstable", bWant)
	g2 := waitResized(t, cs, "guaranteed", gWant)
	b2 := waitResized(t, cs, "burstable", bWant)
	expectSameContainer(t, g, g2)
	expectSameContainer(t, b, b2)
	expectPodCgroup(t, gSlice, gWant, "100663296")
	expectCgroupFiles(t, containerCgroup(t, g2), map[string]string{
		"cpu.max": "30000 100000", "cpu.weight": scopeWeight(300), "memory.max": "100663296",
	})
	expectPodCgroup(t, bSlice, bWant, "134217728")
	expectCgroupFiles(t, bScope, map[string]string{
		"cpu.max": "40000 100000", "cpu.weight": scopeWeight(250), "memory.max": "134217728",
	})

	// A memory limit decrease with the NotRequired policy: the API server refuses it (1.33).
	down := v1.ResourceRequirements{Requests: cpuMem("300m", "64Mi"), Limits: cpuMem("300m", "64Mi")}
	if err := patchResize(ctx, cs, "guaranteed", down); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "memory limits cannot be decreased") {
		t.Errorf("decreasing the Guaranteed pod's memory limit in place: %v; want the API server's \"memory limits cannot be decreased\"", err)
	}

	// Below usage with RestartContainer: a new instance under the new limit.
	bDown := v1.ResourceRequirements{Requests: cpuMem("250m", "32Mi"), Limits: cpuMem("400m", "64Mi")}
	resizePod(t, cs, "burstable", bDown)
	b3 := waitResized(t, cs, "burstable", bDown)
	if c := b3.Status.ContainerStatuses[0]; c.RestartCount != 1 || c.ContainerID == b2.Status.ContainerStatuses[0].ContainerID {
		t.Errorf("the Burstable container after its memory limit went below its usage: restartCount %d, id %s (was %s); want restarted once",
			c.RestartCount, c.ContainerID, b2.Status.ContainerStatuses[0].ContainerID)
	}
	expectPodCgroup(t, bSlice, bDown, "67108864")
	expectCgroupFiles(t, containerCgroup(t, b3), map[string]string{
		"cpu.max": "40000 100000", "cpu.weight": scopeWeight(250), "memory.max": "67108864",
	})
}

// joinKubelet starts the kubelet under test joined to the guest's control plane with the
// KubeletConfiguration fields given; the named API pods are deleted at cleanup, before the
// kubelet stops (it removes their sandboxes).
func joinKubelet(t *testing.T, cs *kubernetes.Clientset, kubeconfig, config string, podNames ...string) {
	t.Helper()
	startNodelet(t, config, "--kubeconfig="+kubeconfig, "--node-ip="+guestNodeIP)
	t.Cleanup(func() {
		for _, name := range podNames {
			_ = cs.CoreV1().Pods("default").Delete(context.Background(), name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
		}
	})
}

func cpuMem(cpu, mem string) v1.ResourceList {
	return v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse(mem)}
}

// resizablePod is a busybox API pod bound to the guest's node, always restarted (a
// RestartContainer resize policy needs it), with an emptyDir at /data that outlives a
// container's restart; memoryRestarts sets memory's resize policy to RestartContainer.
func resizablePod(name, script string, requests, limits v1.ResourceList, memoryRestarts bool) *v1.Pod {
	p := apiPod(name, script, nil)
	p.Spec.RestartPolicy = v1.RestartPolicyAlways
	c := &p.Spec.Containers[0]
	c.Resources = v1.ResourceRequirements{Requests: requests, Limits: limits}
	c.VolumeMounts = []v1.VolumeMount{{Name: "data", MountPath: "/data"}}
	p.Spec.Volumes = []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}}
	if memoryRestarts {
		c.ResizePolicy = []v1.ContainerResizePolicy{
			{ResourceName: v1.ResourceCPU, RestartPolicy: v1.NotRequired},
			{ResourceName: v1.ResourceMemory, RestartPolicy: v1.RestartContainer},
		}
	}
	return p
}

func runningMain(p *v1.Pod) bool {
	cs := p.Status.ContainerStatuses
	return p.Status.Phase == v1.PodRunning && len(cs) > 0 && cs[0].State.Running != nil
}

// patchResize asks for new resources of the pod's container through the resize subresource.
func patchResize(ctx context.Context, cs *kubernetes.Clientset, name string, r v1.ResourceRequirements) error {
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{
		"containers": []any{map[string]any{"name": "main", "resources": r}},
	}})
	if err != nil {
		return err
	}
	_, err = cs.CoreV1().Pods("default").Patch(ctx, name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "resize")
	return err
}

func resizePod(t *testing.T, cs *kubernetes.Clientset, name string, r v1.ResourceRequirements) {
	t.Helper()
	if err := patchResize(context.Background(), cs, name, r); err != nil {
		t.Fatalf("resizing %s: %v", name, err)
	}
}

// waitResized waits until the pod's running container reports the wanted resources as in
// effect and no resize is pending or in progress, then checks allocatedResources.
func waitResized(t *testing.T, cs *kubernetes.Clientset, name string, want v1.ResourceRequirements) *v1.Pod {
	t.Helper()
	p := waitAPIPod(t, cs, name, "resized", func(p *v1.Pod) bool {
		if !runningMain(p) || p.Status.ContainerStatuses[0].Resources == nil {
			return false
		}
		for _, c := range p.Status.Conditions {
			if c.Type == v1.PodResizePending || c.Type == v1.PodResizeInProgress {
				return false
			}
		}
		got := p.Status.ContainerStatuses[0].Resources
		return sameCPUMem(got.Requests, want.Requests) && sameCPUMem(got.Limits, want.Limits)
	})
	if got := p.Status.ContainerStatuses[0].AllocatedResources; !sameCPUMem(got, want.Requests) {
		t.Errorf("%s's allocatedResources %v, want %v", name, got, want.Requests)
	}
	return p
}

func sameCPUMem(a, b v1.ResourceList) bool {
	for _, name := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory} {
		qa, oka := a[name]
		qb, okb := b[name]
		if oka != okb || qa.Cmp(qb) != 0 {
			return false
		}
	}
	return true
}

func expectSameContainer(t *testing.T, before, after *v1.Pod) {
	t.Helper()
	b, a := before.Status.ContainerStatuses[0], after.Status.ContainerStatuses[0]
	if a.ContainerID != b.ContainerID || a.RestartCount != 0 {
		t.Errorf("%s resized in place: container %s restartCount %d, was %s; want the same one, never restarted",
			after.Name, a.ContainerID, a.RestartCount, b.ContainerID)
	}
}

// expectPodCgroup checks a pod slice's cpu.max, cpu.weight and memory.max for a one-container
// pod with resources r (memory.max given in bytes), in the files and in systemd's properties.
func expectPodCgroup(t *testing.T, slice string, r v1.ResourceRequirements, memoryMax string) {
	t.Helper()
	limit, request := r.Limits.Cpu().MilliValue(), r.Requests.Cpu().MilliValue()
	expectCgroupFiles(t, slice, map[string]string{
		"cpu.max":    fmt.Sprintf("%d 100000", limit*100),
		"cpu.weight": sliceWeight(request),
		"memory.max": memoryMax,
	})
	unit := slice[strings.LastIndex(slice, "/")+1:]
	got := systemdShow(t, unit, "CPUQuotaPerSecUSec", "CPUWeight", "MemoryMax")
	want := map[string]string{
		"CPUQuotaPerSecUSec": fmt.Sprintf("%dms", limit), "CPUWeight": sliceWeight(request), "MemoryMax": memoryMax,
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("systemd's %s of %s = %q, want %q", k, unit, got[k], w)
		}
	}
}

// shares is a cpu request as cgroup v1 shares, as the kubelets convert it.
func shares(milli int64) int64 { return max(milli*1024/1000, 2) }

// sliceWeight is the pod slice's cpu.weight for a cpu request: the kubelets convert shares
// to a weight linearly (1 + (shares-2)*9999/262142).
func sliceWeight(milli int64) string {
	return strconv.FormatInt(1+(shares(milli)-2)*9999/262142, 10)
}

// scopeWeight is a container scope's cpu.weight for a cpu request: runc 1.3 (opencontainers/
// cgroups 0.0.4) converts the shares containerd passes by a quadratic in log2(shares) that
// keeps 1024 shares at weight 100.
func scopeWeight(milli int64) string {
	l := math.Log2(float64(shares(milli)))
	return strconv.FormatInt(int64(math.Ceil(math.Pow(10, (l*l+125*l)/612-7.0/34))), 10)
}
