package kuberuntime

import (
	"context"
	"errors"
	"maps"
	"strings"

	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/internal/lib/metrics"
	"github.com/nodelet/nodelet/internal/podspec/timeline"
	"github.com/nodelet/nodelet/internal/runtime/container"
)

// imageVolumes is, per image volume of a pod, the image it mounts (the spec CRI's Mount.image
// takes) or why the image is not there.
type imageVolumes map[string]imageVolume

type imageVolume struct {
	spec *runtimeapi.ImageSpec
	imageOutcome
}

// ensureImageVolumes makes the images of pod's image volumes present as their pull policies
// say (ImageVolume gate on), as upstream does before it starts any container: each through
// the image manager, with its events, back-off and pull secrets. A failure is reported on each
// container mounting the volume when it is to start. nil when the pod has none.
//
// The CRI has no feature that says a runtime mounts images (containerd before 2.1 takes the
// Mount and ignores its image field), so admission refused the pod unless the runtime's
// version can; a runtime that changed since is checked again here rather than trusted.
func (m *Manager) ensureImageVolumes(ctx context.Context, pod *v1.Pod, sb *sandboxInfo) imageVolumes {
	if !m.imageVolumesOn {
		return nil
	}
	var out imageVolumes
	for _, vol := range pod.Spec.Volumes {
		if vol.Image == nil {
			continue
		}
		if out == nil {
			out = imageVolumes{}
		}
		if !m.features.ImageVolumes() {
			msg := m.features.ImageVolumesRefusal()
			out[vol.Name] = imageVolume{imageOutcome: imageOutcome{reason: ReasonCreateContainerConfigError, msg: msg, err: errors.New(msg)}}
			continue
		}
		out[vol.Name] = m.ensureImageVolume(ctx, pod, vol.Name, vol.Image, sb)
	}
	return out
}

func (m *Manager) ensureImageVolume(ctx context.Context, pod *v1.Pod, name string, src *v1.ImageVolumeSource, sb *sandboxInfo) imageVolume {
	pull := m.pullSandbox(pod, sb.config)
	done := m.begin(pod, timeline.ImagePulled, "", "ImageStatus/PullImage", "volume "+name+": "+src.Reference)
	var v imageVolume
	v.ref, v.reason, v.msg, v.err = m.images.EnsureVolumeImage(ctx, pod, src, m.pullSecrets(pod), pull)
	done("", v.err)
	if v.err != nil {
		klog.InfoS("Image volume's image not ready", "pod", klog.KObj(pod), "volume", name, "image", src.Reference, "reason", v.reason)
		return v
	}
	// As upstream's: the resolved image, the name the pod gave, the sandbox's runtime handler
	// (whichever RuntimeClassInImageCriApi says) and the pod's annotations.
	handler, _ := m.handler(pod) // an unknown RuntimeClass has failed the sandbox already
	v.spec = &runtimeapi.ImageSpec{Image: v.ref, UserSpecifiedImage: src.Reference, RuntimeHandler: handler,
		Annotations: maps.Clone(pod.Annotations)}
	return v
}

// forContainer returns the image specs of the image volumes c mounts or, when some of their
// images are not there, those failures in mount order: upstream posts an event for each and
// shows the last as the container's waiting reason.
func (iv imageVolumes) forContainer(c *v1.Container) (map[string]*runtimeapi.ImageSpec, []imageOutcome) {
	if len(iv) == 0 {
		return nil, nil
	}
	specs := map[string]*runtimeapi.ImageSpec{}
	var failed []imageOutcome
	for _, vm := range c.VolumeMounts {
		v, ok := iv[vm.Name]
		switch {
		case !ok:
		case v.err != nil:
			failed = append(failed, v.imageOutcome)
		default:
			specs[vm.Name] = v.spec
		}
	}
	if len(failed) > 0 {
		return nil, failed
	}
	return specs, nil
}

// imageVolumesFailed reports, for a container about to start, the image volumes it mounts
// whose images are not there: a Warning event for each and the last one's reason as the
// container's waiting reason, as upstream (ErrImagePull, ImagePullBackOff...). It says
// whether the container must wait.
func (m *Manager) imageVolumesFailed(ref *v1.ObjectReference, c *v1.Container, sb *sandboxInfo, res *container.SyncResult) bool {
	_, failed := sb.imageVolumes.forContainer(c)
	if len(failed) == 0 {
		return false
	}
	for _, f := range failed {
		m.recorder.Eventf(ref, v1.EventTypeWarning, "Failed", "Error: %s", f.reason)
	}
	last := failed[len(failed)-1]
	res.Waiting[c.Name] = container.WaitingReason{Reason: last.reason, Message: last.msg}
	res.SetErr(last.err)
	return true
}

// countImageVolumes counts c's image volumes in the metrics once its creation was tried: a
// mount failed when the runtime's error names CRI's ImageVolumeMountFailed.
func countImageVolumes(sb *sandboxInfo, c *v1.Container, createErr error) {
	specs, _ := sb.imageVolumes.forContainer(c)
	if len(specs) == 0 {
		return
	}
	mounts := 0
	for _, vm := range c.VolumeMounts {
		if specs[vm.Name] != nil {
			mounts++
		}
	}
	failed := createErr != nil && strings.HasPrefix(status.Convert(createErr).Message(), "ImageVolumeMountFailed")
	metrics.ImageVolumesUsed(len(specs), mounts, failed)
}
