package source

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func validPod() *v1.Pod {
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-node1", Namespace: "default", UID: "3f2c9a1e-0b7d-4e6f-9a58-1c2d3e4f5a6b"},
		Spec: v1.PodSpec{
			Volumes: []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}},
			Containers: []v1.Container{
				{Name: "main", Image: "nginx:1", VolumeMounts: []v1.VolumeMount{{Name: "data", MountPath: "/data"}}},
				{Name: "side", Image: "busybox:1", Ports: []v1.ContainerPort{{ContainerPort: 80, HostPort: 8080}}},
			},
		},
	}
	SetPodDefaults(pod)
	return pod
}

func TestValidatePodAcceptsValidPod(t *testing.T) {
	if err := ValidatePod(validPod()); err != nil {
		t.Fatal(err)
	}
	signals := validPod()
	signals.Spec.OS = &v1.PodOS{Name: v1.Linux}
	signals.Spec.Containers[0].Lifecycle = &v1.Lifecycle{StopSignal: ptr.To(v1.SIGRTMINPLUS1)}
	if err := ValidatePod(signals); err != nil {
		t.Fatal(err)
	}
}

func TestValidatePodMessages(t *testing.T) {
	always := v1.ContainerRestartPolicyAlways
	cases := map[string]refusal{
		"no name":          {func(p *v1.Pod) { p.Name = "" }, "metadata.name: Required value"},
		"bad name":         {func(p *v1.Pod) { p.Name = "Web_1" }, `metadata.name: Invalid value: "Web_1": a lowercase RFC 1123 subdomain`},
		"bad namespace":    {func(p *v1.Pod) { p.Namespace = "a.b" }, `metadata.namespace: Invalid value: "a.b"`},
		"no containers":    {func(p *v1.Pod) { p.Spec.Containers = nil }, "spec.containers: Required value"},
		"missing image":    {func(p *v1.Pod) { p.Spec.Containers[1].Image = " " }, "spec.containers[1].image: Required value"},
		"duplicate name":   {func(p *v1.Pod) { p.Spec.Containers[1].Name = "main" }, `spec.containers[1].name: Duplicate value: "main"`},
		"dup across init":  {func(p *v1.Pod) { p.Spec.InitContainers = []v1.Container{{Name: "side", Image: "x:1"}} }, `spec.containers[1].name: Duplicate value: "side"`},
		"bad container":    {func(p *v1.Pod) { p.Spec.Containers[0].Name = "Main" }, `spec.containers[0].name: Invalid value: "Main": a lowercase RFC 1123 label`},
		"restart policy":   {func(p *v1.Pod) { p.Spec.RestartPolicy = "Sometimes" }, `spec.restartPolicy: Unsupported value: "Sometimes": supported values: "Always", "OnFailure", "Never"`},
		"container port":   {func(p *v1.Pod) { p.Spec.Containers[1].Ports[0].ContainerPort = 0 }, "spec.containers[1].ports[0].containerPort: Invalid value: 0: must be between 1 and 65535, inclusive"},
		"host port":        {func(p *v1.Pod) { p.Spec.Containers[1].Ports[0].HostPort = 70000 }, "spec.containers[1].ports[0].hostPort: Invalid value: 70000"},
		"request > limit":  {requestOverLimit, `spec.containers[0].resources.requests[memory]: Invalid value: "2Gi": must be less than or equal to memory limit of 1Gi`},
		"duplicate volume": {func(p *v1.Pod) { p.Spec.Volumes = append(p.Spec.Volumes, p.Spec.Volumes[0]) }, `spec.volumes[1].name: Duplicate value: "data"`},
		"unknown mount":    {func(p *v1.Pod) { p.Spec.Containers[0].VolumeMounts[0].Name = "logs" }, `spec.containers[0].volumeMounts[0].name: Not found: "logs"`},
		"no volume type":   {func(p *v1.Pod) { p.Spec.Volumes[0].EmptyDir = nil }, "spec.volumes[0]: Required value: must specify a volume type"},
		"sidecar in app":   {func(p *v1.Pod) { p.Spec.Containers[0].RestartPolicy = &always }, "spec.containers[0].restartPolicy: Forbidden"},
		"stop signal, no OS": {func(p *v1.Pod) { p.Spec.Containers[1].Lifecycle = &v1.Lifecycle{StopSignal: ptr.To(v1.SIGUSR1)} },
			"spec.containers[1].lifecycle.stopSignal: Forbidden: may not be set for containers with empty `spec.os.name`"},
		"unknown stop signal": {func(p *v1.Pod) {
			p.Spec.OS = &v1.PodOS{Name: v1.Linux}
			p.Spec.Containers[0].Lifecycle = &v1.Lifecycle{StopSignal: ptr.To(v1.Signal("SIGNOPE"))}
		}, `spec.containers[0].lifecycle.stopSignal: Unsupported value: "SIGNOPE"`},
	}
	expectRefused(t, cases)
}

func requestOverLimit(p *v1.Pod) {
	p.Spec.Containers[0].Resources = v1.ResourceRequirements{
		Requests: v1.ResourceList{v1.ResourceMemory: resource.MustParse("2Gi")},
		Limits:   v1.ResourceList{v1.ResourceMemory: resource.MustParse("1Gi")},
	}
}

func TestValidatePodReportsEveryProblem(t *testing.T) {
	pod := validPod()
	pod.Spec.Containers[0].Image = ""
	pod.Spec.Containers[1].Image = ""
	err := ValidatePod(pod)
	if err == nil || !strings.Contains(err.Error(), "spec.containers[0].image") || !strings.Contains(err.Error(), "spec.containers[1].image") {
		t.Errorf("err = %v, want both missing images", err)
	}
}

// refusal is a change that makes validPod invalid, and what the error must say.
type refusal struct {
	mutate func(p *v1.Pod)
	want   string
}

// expectRefused checks that each case's pod is refused with its message.
func expectRefused(t *testing.T, cases map[string]refusal) {
	t.Helper()
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			pod := validPod()
			tc.mutate(pod)
			err := ValidatePod(pod)
			if err == nil {
				t.Fatal("accepted")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not contain %q", err, tc.want)
			}
		})
	}
}
