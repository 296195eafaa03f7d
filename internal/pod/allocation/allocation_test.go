package allocation

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

func resources(cpuLimit, memRequest string) v1.ResourceRequirements {
	r := v1.ResourceRequirements{}
	if cpuLimit != "" {
		r.Limits = v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpuLimit)}
	}
	if memRequest != "" {
		r.Requests = v1.ResourceList{v1.ResourceMemory: resource.MustParse(memRequest)}
	}
	return r
}

func testPod(uid types.UID, cpuLimit string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{UID: uid, Name: "p", Namespace: "ns"},
		Spec: v1.PodSpec{
			InitContainers: []v1.Container{
				{Name: "init", Resources: resources("100m", "")},
				{Name: "sidecar", RestartPolicy: ptr.To(v1.ContainerRestartPolicyAlways), Resources: resources(cpuLimit, "")},
			},
			Containers: []v1.Container{{Name: "app", Resources: resources(cpuLimit, "64Mi")}},
		},
	}
}

func TestAllocatedPodKeepsAllocationOverSpec(t *testing.T) {
	m, err := New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	pod := testPod("u1", "500m")
	if got, found := m.AllocatedPod(pod); found || got != pod {
		t.Fatalf("no allocation yet: got found=%v, same pod=%v", found, got == pod)
	}
	if err := m.SetAllocated(pod); err != nil {
		t.Fatal(err)
	}
	if got, found := m.AllocatedPod(pod); !found || got != pod {
		t.Fatalf("unchanged spec: want the same pod back, found=%v", found)
	}
	resized := testPod("u1", "1")
	got, found := m.AllocatedPod(resized)
	if !found || got == resized {
		t.Fatalf("resized spec: want a copy with the allocation, found=%v", found)
	}
	for _, c := range []v1.Container{got.Spec.Containers[0], got.Spec.InitContainers[1]} {
		if q := c.Resources.Limits[v1.ResourceCPU]; q.String() != "500m" {
			t.Errorf("%s: cpu limit %s, want the allocated 500m", c.Name, q.String())
		}
	}
	if q := resized.Spec.Containers[0].Resources.Limits[v1.ResourceCPU]; q.String() != "1" {
		t.Errorf("the desired pod was changed: %s", q.String())
	}
}

func TestCheckpointSurvivesRestartAndGoesWithThePod(t *testing.T) {
	dir := t.TempDir()
	m, _ := New(dir)
	if err := m.SetAllocated(testPod("u1", "500m")); err != nil {
		t.Fatal(err)
	}
	if err := m.SetActuated("u1", "app", resources("250m", "")); err != nil {
		t.Fatal(err)
	}
	if err := m.SetAllocated(testPod("u2", "1")); err != nil {
		t.Fatal(err)
	}

	again, err := New(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := again.AllocatedPod(testPod("u1", "2")); got.Spec.Containers[0].Resources.Limits.Cpu().String() != "500m" {
		t.Errorf("allocation lost across restart: %v", got.Spec.Containers[0].Resources)
	}
	if r, ok := again.Actuated("u1", "app"); !ok || r.Limits.Cpu().String() != "250m" {
		t.Errorf("actuated lost across restart: %v %v", r, ok)
	}
	if _, ok := again.Actuated("u1", "init"); ok {
		t.Error("a regular init container has no actuated record")
	}

	if err := again.RemovePod("u1"); err != nil {
		t.Fatal(err)
	}
	if err := again.RemoveOrphans(func(uid types.UID) bool { return uid != "u2" }); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{AllocatedFile, ActuatedFile} {
		data, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(data), "u1") || strings.Contains(string(data), "u2") {
			t.Errorf("%s still names a removed pod: %s", f, data)
		}
	}
}

// The upstream kubelet v1.33 wrote testdata/upstream_allocated_pods_state; nodelet reads it, and
// writes the same bytes for the same content.
func TestCheckpointFormatIsUpstreams(t *testing.T) {
	want, err := os.ReadFile("testdata/upstream_allocated_pods_state")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, AllocatedFile), want, 0o600); err != nil {
		t.Fatal(err)
	}
	m, err := New(dir)
	if err != nil {
		t.Fatal(err)
	}
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "uid-1"}, Spec: v1.PodSpec{Containers: []v1.Container{{Name: "app"}}}}
	got, found := m.AllocatedPod(pod)
	if !found || got.Spec.Containers[0].Resources.Limits.Cpu().String() != "500m" || got.Spec.Containers[0].Resources.Requests.Memory().String() != "64Mi" {
		t.Fatalf("upstream's checkpoint not read: found=%v %v", found, got.Spec.Containers[0].Resources)
	}
	out := t.TempDir()
	m2, _ := New(out)
	pod.Spec.Containers[0].Resources = v1.ResourceRequirements{
		Limits:   v1.ResourceList{v1.ResourceCPU: resource.MustParse("500m")},
		Requests: v1.ResourceList{v1.ResourceMemory: resource.MustParse("64Mi")},
	}
	if err := m2.SetAllocated(pod); err != nil {
		t.Fatal(err)
	}
	written, _ := os.ReadFile(filepath.Join(out, AllocatedFile))
	if string(written) != string(want) {
		t.Errorf("written checkpoint\n%s\nwant upstream's\n%s", written, want)
	}
}

func TestCorruptCheckpointIsAnErrorNamingTheFile(t *testing.T) {
	dir := t.TempDir()
	data, _ := os.ReadFile("testdata/upstream_allocated_pods_state")
	tampered := strings.Replace(string(data), "500m", "900m", 1)
	if err := os.WriteFile(filepath.Join(dir, AllocatedFile), []byte(tampered), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := New(dir)
	if err == nil || !strings.Contains(err.Error(), AllocatedFile) || !strings.Contains(err.Error(), "checksum") {
		t.Fatalf("want a checksum error naming the file, got %v", err)
	}
	if after, _ := os.ReadFile(filepath.Join(dir, AllocatedFile)); string(after) != tampered {
		t.Error("the corrupt file was changed; it must be kept for the administrator")
	}
}
