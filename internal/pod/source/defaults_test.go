package source

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestSetPodDefaults(t *testing.T) {
	probe := func() *v1.Probe {
		return &v1.Probe{ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Port: intstr.FromInt32(80)}}}
	}
	pod := &v1.Pod{Spec: v1.PodSpec{
		HostNetwork:    true,
		InitContainers: []v1.Container{{Name: "init", Image: "busybox"}},
		Containers: []v1.Container{{
			Name:           "main",
			Image:          "nginx:1.25",
			Ports:          []v1.ContainerPort{{ContainerPort: 8080}},
			Env:            []v1.EnvVar{{Name: "NODE", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}}},
			LivenessProbe:  probe(),
			ReadinessProbe: &v1.Probe{TimeoutSeconds: 5},
			Resources:      v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")}},
		}},
		Volumes: []v1.Volume{{Name: "s", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "x"}}}},
	}}
	SetPodDefaults(pod)
	spec := pod.Spec
	if spec.RestartPolicy != v1.RestartPolicyAlways || spec.DNSPolicy != v1.DNSClusterFirst ||
		spec.SchedulerName != "default-scheduler" || spec.SecurityContext == nil {
		t.Errorf("pod defaults: restart %q dns %q scheduler %q securityContext %v",
			spec.RestartPolicy, spec.DNSPolicy, spec.SchedulerName, spec.SecurityContext)
	}
	// Priority is the API server's admission's to set, not a default: static pods keep none.
	if *spec.TerminationGracePeriodSeconds != 30 || !*spec.EnableServiceLinks || spec.Priority != nil {
		t.Errorf("grace %d serviceLinks %v priority %v",
			*spec.TerminationGracePeriodSeconds, *spec.EnableServiceLinks, spec.Priority)
	}
	init, c := spec.InitContainers[0], spec.Containers[0]
	if init.ImagePullPolicy != v1.PullAlways || init.TerminationMessagePath != "/dev/termination-log" ||
		init.TerminationMessagePolicy != v1.TerminationMessageReadFile {
		t.Errorf("init container defaults: %q %q %q", init.ImagePullPolicy, init.TerminationMessagePath, init.TerminationMessagePolicy)
	}
	if c.ImagePullPolicy != v1.PullIfNotPresent {
		t.Errorf("pull policy for tagged image = %q", c.ImagePullPolicy)
	}
	if p := c.Ports[0]; p.Protocol != v1.ProtocolTCP || p.HostPort != 8080 {
		t.Errorf("port = %+v, want TCP and hostPort 8080 under hostNetwork", p)
	}
	if got := c.Env[0].ValueFrom.FieldRef.APIVersion; got != "v1" {
		t.Errorf("fieldRef apiVersion = %q", got)
	}
	if req := c.Resources.Requests[v1.ResourceCPU]; req.String() != "1" {
		t.Errorf("cpu request from limit = %s", req.String())
	}
	lp := c.LivenessProbe
	if lp.TimeoutSeconds != 1 || lp.PeriodSeconds != 10 || lp.SuccessThreshold != 1 || lp.FailureThreshold != 3 ||
		lp.HTTPGet.Path != "/" || lp.HTTPGet.Scheme != v1.URISchemeHTTP {
		t.Errorf("liveness probe defaults: %+v %+v", lp, lp.HTTPGet)
	}
	if c.ReadinessProbe.TimeoutSeconds != 5 {
		t.Errorf("explicit probe timeout overwritten: %d", c.ReadinessProbe.TimeoutSeconds)
	}
	if mode := spec.Volumes[0].Secret.DefaultMode; mode == nil || *mode != 0o644 {
		t.Errorf("secret default mode = %v", mode)
	}
}

func TestSetPodDefaultsKeepsExplicitValues(t *testing.T) {
	grace := int64(5)
	pod := &v1.Pod{Spec: v1.PodSpec{
		RestartPolicy:                 v1.RestartPolicyNever,
		DNSPolicy:                     v1.DNSDefault,
		TerminationGracePeriodSeconds: &grace,
		Containers:                    []v1.Container{{Name: "c", Image: "x:latest", ImagePullPolicy: v1.PullNever}},
	}}
	SetPodDefaults(pod)
	if pod.Spec.RestartPolicy != v1.RestartPolicyNever || pod.Spec.DNSPolicy != v1.DNSDefault ||
		*pod.Spec.TerminationGracePeriodSeconds != 5 || pod.Spec.Containers[0].ImagePullPolicy != v1.PullNever {
		t.Errorf("explicit values overwritten: %+v", pod.Spec)
	}
}

func TestDefaultPullPolicy(t *testing.T) {
	for image, want := range map[string]v1.PullPolicy{
		"busybox":                        v1.PullAlways,
		"busybox:latest":                 v1.PullAlways,
		"busybox:1.36":                   v1.PullIfNotPresent,
		"localhost:5000/busybox":         v1.PullAlways,
		"localhost:5000/busybox:1.36":    v1.PullIfNotPresent,
		"registry.k8s.io/pause:3.10":     v1.PullIfNotPresent,
		"busybox@sha256:abcdef":          v1.PullIfNotPresent,
		"busybox:latest@sha256:abcdef":   v1.PullAlways,
		"nodelet.local/testhelper:v1":    v1.PullIfNotPresent,
		"localhost:5000/ns/img:latest":   v1.PullAlways,
		"localhost:5000/ns/img@sha256:0": v1.PullIfNotPresent,
	} {
		if got := defaultPullPolicy(image); got != want {
			t.Errorf("defaultPullPolicy(%q) = %s, want %s", image, got, want)
		}
	}
}
