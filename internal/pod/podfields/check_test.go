package podfields

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
)

// ordinary is a pod using many of the fields nodelet acts on; Check must leave it alone.
func ordinary() *v1.PodSpec {
	mount := []v1.VolumeMount{{Name: "data", MountPath: "/data", RecursiveReadOnly: ptr.To(v1.RecursiveReadOnlyDisabled)}}
	return &v1.PodSpec{
		Volumes: []v1.Volume{
			{Name: "data", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{
				Medium: v1.StorageMediumMemory, SizeLimit: ptr.To(resource.MustParse("1Gi")),
			}}},
			{Name: "cfg", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{
				{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "token"}},
				{ConfigMap: &v1.ConfigMapProjection{LocalObjectReference: v1.LocalObjectReference{Name: "c"}}},
			}}}},
		},
		InitContainers: []v1.Container{{Name: "sidecar", Image: "i", RestartPolicy: ptr.To(v1.ContainerRestartPolicyAlways)}},
		Containers: []v1.Container{{
			Name: "app", Image: "i", VolumeMounts: mount,
			Resources: v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")}},
			Lifecycle: &v1.Lifecycle{PreStop: &v1.LifecycleHandler{Sleep: &v1.SleepAction{Seconds: 1}}, StopSignal: ptr.To(v1.SIGUSR1)},
			SecurityContext: &v1.SecurityContext{
				WindowsOptions: &v1.WindowsSecurityContextOptions{GMSACredentialSpecName: ptr.To("ignored-on-linux")},
			},
			LivenessProbe: &v1.Probe{ProbeHandler: v1.ProbeHandler{TCPSocket: &v1.TCPSocketAction{}}},
		}},
		SecurityContext: &v1.PodSecurityContext{
			WindowsOptions:      &v1.WindowsSecurityContextOptions{HostProcess: ptr.To(false)},
			SELinuxChangePolicy: ptr.To(v1.SELinuxChangePolicyMountOption),
		},
		Affinity:    &v1.Affinity{PodAntiAffinity: &v1.PodAntiAffinity{}},
		Tolerations: []v1.Toleration{{Key: "k", TolerationSeconds: ptr.To[int64](5)}},
		HostUsers:   ptr.To(false),
	}
}

func TestCheckAcceptsWhatNodeletActsOn(t *testing.T) {
	if field, why := Check(ordinary()); field != "" {
		t.Errorf("Check refused %s: %s", field, why)
	}
	if field, _ := Check(&v1.PodSpec{}); field != "" {
		t.Errorf("an empty spec was refused for %s", field)
	}
	huge := ordinary()
	huge.Containers[0].Resources.Limits["hugepages-2Mi"] = resource.MustParse("4Mi")
	huge.Volumes[0].EmptyDir.Medium = v1.StorageMediumHugePagesPrefix + "2Mi"
	if field, why := Check(huge); field != "" {
		t.Errorf("a pod with huge pages was refused for %s: %s", field, why)
	}
}

func TestCheckNamesTheRefusedField(t *testing.T) {
	tests := []struct {
		name      string
		mutate    func(*v1.PodSpec)
		wantField string
		wantWhy   string
	}{
		{"pod-level resources", func(s *v1.PodSpec) {
			s.Resources = &v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")}}
		}, "spec.resources", "PodLevelResources"},
		{"in-tree cloud disk", func(s *v1.PodSpec) {
			s.Volumes[0].VolumeSource = v1.VolumeSource{AWSElasticBlockStore: &v1.AWSElasticBlockStoreVolumeSource{VolumeID: "vol-1"}}
		}, "spec.volumes[0].awsElasticBlockStore", "ebs.csi.aws.com"},
		{"nfs", func(s *v1.PodSpec) {
			s.Volumes[0].VolumeSource = v1.VolumeSource{NFS: &v1.NFSVolumeSource{Server: "s", Path: "/"}}
		}, "spec.volumes[0].nfs", "no nfs plugin"},
		{"clusterTrustBundle", func(s *v1.PodSpec) {
			src := s.Volumes[1].Projected
			src.Sources = append(src.Sources, v1.VolumeProjection{ClusterTrustBundle: &v1.ClusterTrustBundleProjection{Path: "ca"}})
		}, "spec.volumes[1].projected.sources[2].clusterTrustBundle", "ConfigMap"},
		{"tcpSocket hook", func(s *v1.PodSpec) {
			s.Containers[0].Lifecycle.PostStart = &v1.LifecycleHandler{TCPSocket: &v1.TCPSocketAction{}}
		}, "spec.containers[0].lifecycle.postStart.tcpSocket", "never runs"},
		{"host process container", func(s *v1.PodSpec) {
			s.Containers[0].SecurityContext.WindowsOptions.HostProcess = ptr.To(true)
		}, "spec.containers[0].securityContext.windowsOptions", "Windows nodes"},
		{"host process pod", func(s *v1.PodSpec) {
			s.SecurityContext.WindowsOptions.HostProcess = ptr.To(true)
		}, "spec.securityContext.windowsOptions", "Windows nodes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := ordinary()
			tt.mutate(spec)
			field, why := Check(spec)
			if field != tt.wantField || !strings.Contains(why, tt.wantWhy) {
				t.Errorf("Check = %q (%q), want %q (saying %q)", field, why, tt.wantField, tt.wantWhy)
			}
		})
	}
}
