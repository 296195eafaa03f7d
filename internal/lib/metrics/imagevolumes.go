package metrics

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

var (
	imageVolumesRequested = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "kubelet_image_volume_requested_total", Help: alpha("Number of requested image volumes."),
	})
	imageVolumesMounted = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "kubelet_image_volume_mounted_succeed_total", Help: alpha("Number of successful image volume mounts."),
	})
	imageVolumeMountErrors = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "kubelet_image_volume_mounted_errors_total", Help: alpha("Number of failed image volume mounts."),
	})
	imageVolumesOnce sync.Once
)

// EnableImageVolumes adds the image volume counters to the registry, once: upstream serves
// them only with the ImageVolume gate on.
func EnableImageVolumes() {
	imageVolumesOnce.Do(func() { Registry().MustRegister(imageVolumesRequested, imageVolumesMounted, imageVolumeMountErrors) })
}

// ImageVolumesUsed counts one container creation that asked for requested image volumes in
// mounts mounts: each mount failed when the runtime said it could not mount an image
// (mountFailed), else succeeded, as upstream counts them.
func ImageVolumesUsed(requested, mounts int, mountFailed bool) {
	imageVolumesRequested.Add(float64(requested))
	if mountFailed {
		imageVolumeMountErrors.Add(float64(mounts))
	} else {
		imageVolumesMounted.Add(float64(mounts))
	}
}
