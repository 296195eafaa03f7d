package source

import (
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/nodelet/nodelet/internal/runtime/container"
)

// Values the API server would fill in; static pods never pass through it.
const (
	defaultTerminationGracePeriod = int64(30)
	defaultSchedulerName          = "default-scheduler"
	defaultTerminationMessagePath = "/dev/termination-log"
	defaultVolumeMode             = int32(0o644)
)

// SetPodDefaults fills the fields the API server would default on a pod it
// admits. It only sets fields that are empty.
func SetPodDefaults(pod *v1.Pod) {
	spec := &pod.Spec
	if spec.RestartPolicy == "" {
		spec.RestartPolicy = v1.RestartPolicyAlways
	}
	if spec.DNSPolicy == "" {
		spec.DNSPolicy = v1.DNSClusterFirst
	}
	if spec.TerminationGracePeriodSeconds == nil {
		spec.TerminationGracePeriodSeconds = ptr.To(defaultTerminationGracePeriod)
	}
	if spec.SchedulerName == "" {
		spec.SchedulerName = defaultSchedulerName
	}
	if spec.SecurityContext == nil {
		spec.SecurityContext = &v1.PodSecurityContext{}
	}
	if spec.EnableServiceLinks == nil {
		spec.EnableServiceLinks = ptr.To(true)
	}
	for i := range spec.InitContainers {
		setContainerDefaults(&spec.InitContainers[i], spec.HostNetwork)
	}
	for i := range spec.Containers {
		setContainerDefaults(&spec.Containers[i], spec.HostNetwork)
	}
	for i := range spec.Volumes {
		setVolumeDefaults(&spec.Volumes[i].VolumeSource)
	}
	roundUpResources(pod)
}

func setContainerDefaults(c *v1.Container, hostNetwork bool) {
	if c.ImagePullPolicy == "" {
		c.ImagePullPolicy = defaultPullPolicy(c.Image)
	}
	if c.TerminationMessagePath == "" {
		c.TerminationMessagePath = defaultTerminationMessagePath
	}
	if c.TerminationMessagePolicy == "" {
		c.TerminationMessagePolicy = v1.TerminationMessageReadFile
	}
	for i := range c.Ports {
		port := &c.Ports[i]
		if port.Protocol == "" {
			port.Protocol = v1.ProtocolTCP
		}
		// With the host's network the container port is the host port.
		if hostNetwork && port.HostPort == 0 {
			port.HostPort = port.ContainerPort
		}
	}
	for i := range c.Env {
		if from := c.Env[i].ValueFrom; from != nil && from.FieldRef != nil && from.FieldRef.APIVersion == "" {
			from.FieldRef.APIVersion = "v1"
		}
	}
	setRequestsFromLimits(&c.Resources)
	for _, probe := range []*v1.Probe{c.LivenessProbe, c.ReadinessProbe, c.StartupProbe} {
		setProbeDefaults(probe)
	}
	if c.Lifecycle != nil {
		for _, h := range []*v1.LifecycleHandler{c.Lifecycle.PostStart, c.Lifecycle.PreStop} {
			if h != nil {
				setHTTPGetDefaults(h.HTTPGet)
			}
		}
	}
}

// defaultPullPolicy pulls moving tags (latest or none) every time and pinned
// ones only when missing.
func defaultPullPolicy(image string) v1.PullPolicy {
	ref, digest, _ := strings.Cut(image, "@")
	name := ref[strings.LastIndex(ref, "/")+1:]
	tag := ""
	if i := strings.LastIndex(name, ":"); i >= 0 {
		tag = name[i+1:]
	}
	if tag == "latest" || (tag == "" && digest == "") {
		return v1.PullAlways
	}
	return v1.PullIfNotPresent
}

// setRequestsFromLimits makes a limit without a request also the request. Any limits, even
// none, make the requests non-nil, as upstream's defaulting does.
func setRequestsFromLimits(r *v1.ResourceRequirements) {
	if r.Limits != nil && r.Requests == nil {
		r.Requests = v1.ResourceList{}
	}
	for name, limit := range r.Limits {
		if _, ok := r.Requests[name]; !ok {
			r.Requests[name] = limit.DeepCopy()
		}
	}
}

func setProbeDefaults(p *v1.Probe) {
	if p == nil {
		return
	}
	container.SetProbeDefaults(p)
	setHTTPGetDefaults(p.HTTPGet)
}

func setHTTPGetDefaults(h *v1.HTTPGetAction) {
	if h == nil {
		return
	}
	if h.Path == "" {
		h.Path = "/"
	}
	if h.Scheme == "" {
		h.Scheme = v1.URISchemeHTTP
	}
}

func setVolumeDefaults(vs *v1.VolumeSource) {
	setPluginVolumeDefaults(vs)
	switch {
	case vs.HostPath != nil && vs.HostPath.Type == nil:
		vs.HostPath.Type = ptr.To(v1.HostPathUnset)
	case vs.Secret != nil && vs.Secret.DefaultMode == nil:
		vs.Secret.DefaultMode = ptr.To(defaultVolumeMode)
	case vs.ConfigMap != nil && vs.ConfigMap.DefaultMode == nil:
		vs.ConfigMap.DefaultMode = ptr.To(defaultVolumeMode)
	case vs.Projected != nil && vs.Projected.DefaultMode == nil:
		vs.Projected.DefaultMode = ptr.To(defaultVolumeMode)
	case vs.DownwardAPI != nil:
		if vs.DownwardAPI.DefaultMode == nil {
			vs.DownwardAPI.DefaultMode = ptr.To(defaultVolumeMode)
		}
		for i := range vs.DownwardAPI.Items {
			if ref := vs.DownwardAPI.Items[i].FieldRef; ref != nil && ref.APIVersion == "" {
				ref.APIVersion = "v1"
			}
		}
	}
}
