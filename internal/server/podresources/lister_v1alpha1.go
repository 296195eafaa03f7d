package podresources

import (
	"context"

	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"
	"k8s.io/kubelet/pkg/apis/podresources/v1alpha1"
)

// alphaLister is the older v1alpha1 service, which upstream still serves on the same socket for
// clients that never moved to v1: app containers and their devices only.
type alphaLister struct {
	opts Options
}

var _ v1alpha1.PodResourcesListerServer = (*alphaLister)(nil)

func (l *alphaLister) List(ctx context.Context, _ *v1alpha1.ListPodResourcesRequest) (*v1alpha1.ListPodResourcesResponse, error) {
	requestsTotal.WithLabelValues("v1alpha1").Inc()
	if err := waitForPods(ctx, l.opts.PodsSynced); err != nil {
		return nil, err
	}
	pods := l.opts.Pods.Pods()
	out := make([]*v1alpha1.PodResources, 0, len(pods))
	for _, pod := range pods {
		res := &v1alpha1.PodResources{Name: pod.Name, Namespace: pod.Namespace,
			Containers: make([]*v1alpha1.ContainerResources, 0, len(pod.Spec.Containers))}
		for _, c := range pod.Spec.Containers {
			cr := &v1alpha1.ContainerResources{Name: c.Name}
			if l.opts.Devices != nil {
				cr.Devices = alphaDevices(l.opts.Devices.ContainerDevices(pod.UID, c.Name))
			}
			res.Containers = append(res.Containers, cr)
		}
		out = append(out, res)
	}
	return &v1alpha1.ListPodResourcesResponse{PodResources: out}, nil
}

// alphaDevices drops what v1alpha1 has no field for: the devices' NUMA topology.
func alphaDevices(devices []*podresourcesv1.ContainerDevices) []*v1alpha1.ContainerDevices {
	var out []*v1alpha1.ContainerDevices
	for _, d := range devices {
		out = append(out, &v1alpha1.ContainerDevices{ResourceName: d.ResourceName, DeviceIds: d.DeviceIds})
	}
	return out
}
