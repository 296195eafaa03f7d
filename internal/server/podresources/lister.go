package podresources

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"
	"k8s.io/utils/cpuset"

	"github.com/nodelet/nodelet/internal/podspec/sidecar"
)

// apiVersion is the server_api_version label of the requests this service counts.
const apiVersion = "v1"

// lister is the v1 PodResourcesLister service over the providers.
type lister struct {
	opts Options
}

var _ podresourcesv1.PodResourcesListerServer = (*lister)(nil)

// List reports every pod the node holds (terminated ones too, until they are removed, as
// upstream v1.33) with what each of its containers was given.
func (l *lister) List(ctx context.Context, _ *podresourcesv1.ListPodResourcesRequest) (*podresourcesv1.ListPodResourcesResponse, error) {
	requestsTotal.WithLabelValues(apiVersion).Inc()
	requestsList.WithLabelValues(apiVersion).Inc()
	if err := waitForPods(ctx, l.opts.PodsSynced); err != nil {
		return nil, err
	}
	pods := l.opts.Pods.Pods()
	out := make([]*podresourcesv1.PodResources, 0, len(pods))
	for _, pod := range pods {
		out = append(out, l.podResources(pod))
	}
	return &podresourcesv1.ListPodResourcesResponse{PodResources: out}, nil
}

// podsSyncPoll is how often a request waiting for the pods checks again.
const podsSyncPoll = 50 * time.Millisecond

// podsSyncWait bounds that wait: past it the answer holds the pods known so far, as upstream's
// always does, so an API server that is down at start does not hang monitoring agents.
var podsSyncWait = 10 * time.Second

// waitForPods returns once synced holds (nil: at once) or podsSyncWait has passed, or
// Unavailable when ctx ends first.
func waitForPods(ctx context.Context, synced func() bool) error {
	if synced == nil || synced() {
		return nil
	}
	err := wait.PollUntilContextTimeout(ctx, podsSyncPoll, podsSyncWait, false, func(context.Context) (bool, error) {
		return synced(), nil
	})
	if err != nil && ctx.Err() != nil {
		return status.Error(codes.Unavailable, "the pods of the node are not known yet")
	}
	return nil
}

// GetAllocatableResources reports what the managers can give out: the node's capacity for
// them, not what is still free.
func (l *lister) GetAllocatableResources(_ context.Context, _ *podresourcesv1.AllocatableResourcesRequest) (*podresourcesv1.AllocatableResourcesResponse, error) {
	requestsTotal.WithLabelValues(apiVersion).Inc()
	requestsGetAllocatable.WithLabelValues(apiVersion).Inc()
	resp := &podresourcesv1.AllocatableResourcesResponse{}
	if l.opts.Devices != nil {
		resp.Devices = l.opts.Devices.AllocatableDevices()
	}
	if l.opts.CPUs != nil {
		resp.CpuIds = cpuIDs(l.opts.CPUs.AllocatableCPUs())
	}
	if l.opts.Memory != nil {
		resp.Memory = l.opts.Memory.AllocatableMemory()
	}
	return resp, nil
}

// Get reports one pod, by namespace and name, when the KubeletPodResourcesGet gate is on.
// The error texts are upstream's: clients match them.
func (l *lister) Get(ctx context.Context, req *podresourcesv1.GetPodResourcesRequest) (*podresourcesv1.GetPodResourcesResponse, error) {
	requestsTotal.WithLabelValues(apiVersion).Inc()
	requestsGet.WithLabelValues(apiVersion).Inc()
	if !l.opts.GetEnabled {
		errorsGet.WithLabelValues(apiVersion).Inc()
		return nil, fmt.Errorf("PodResources API Get method disabled")
	}
	if err := waitForPods(ctx, l.opts.PodsSynced); err != nil {
		return nil, err
	}
	pod, ok := l.opts.Pods.GetByName(req.PodNamespace, req.PodName)
	if !ok {
		errorsGet.WithLabelValues(apiVersion).Inc()
		return nil, fmt.Errorf("pod %s in namespace %s not found", req.PodName, req.PodNamespace)
	}
	return &podresourcesv1.GetPodResourcesResponse{PodResources: l.podResources(pod)}, nil
}

// podResources lists the pod's long-running containers: its sidecars (restartable init
// containers) first, then its app containers. Init containers that run to completion and
// ephemeral containers hold nothing and are left out, as upstream.
func (l *lister) podResources(pod *v1.Pod) *podresourcesv1.PodResources {
	out := &podresourcesv1.PodResources{Name: pod.Name, Namespace: pod.Namespace,
		Containers: make([]*podresourcesv1.ContainerResources, 0, len(pod.Spec.InitContainers)+len(pod.Spec.Containers))}
	for i := range pod.Spec.InitContainers {
		if c := &pod.Spec.InitContainers[i]; sidecar.Is(c) {
			out.Containers = append(out.Containers, l.containerResources(pod, c))
		}
	}
	for i := range pod.Spec.Containers {
		out.Containers = append(out.Containers, l.containerResources(pod, &pod.Spec.Containers[i]))
	}
	return out
}

func (l *lister) containerResources(pod *v1.Pod, c *v1.Container) *podresourcesv1.ContainerResources {
	out := &podresourcesv1.ContainerResources{Name: c.Name}
	if l.opts.Devices != nil {
		out.Devices = l.opts.Devices.ContainerDevices(pod.UID, c.Name)
	}
	if l.opts.CPUs != nil {
		out.CpuIds = cpuIDs(l.opts.CPUs.ContainerCPUs(pod.UID, c.Name))
	}
	if l.opts.Memory != nil {
		out.Memory = l.opts.Memory.ContainerMemory(pod.UID, c.Name)
	}
	if l.opts.DynamicResources != nil {
		out.DynamicResources = l.opts.DynamicResources.ContainerDynamicResources(pod, c)
	}
	return out
}

// cpuIDs are the set's CPUs in ascending order.
func cpuIDs(set cpuset.CPUSet) []int64 {
	ids := make([]int64, 0, set.Size())
	for _, id := range set.List() {
		ids = append(ids, int64(id))
	}
	return ids
}
