package kuberuntime

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodelet/nodelet/internal/runtime/container"
	"github.com/nodelet/nodelet/internal/runtime/cri"
)

// GetPodStatus reads every sandbox and container (dead ones too) the runtime holds for uid.
func (m *Manager) GetPodStatus(ctx context.Context, uid types.UID, name, namespace string) (*container.PodStatus, error) {
	selector := map[string]string{container.LabelPodUID: string(uid)}
	sandboxes, err := m.cri.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: selector})
	if err != nil {
		return nil, fmt.Errorf("list sandboxes of pod %s: %w", uid, err)
	}
	status := &container.PodStatus{UID: uid, Name: name, Namespace: namespace, Timestamp: time.Now()}
	for _, sb := range sandboxes {
		st, err := m.cri.PodSandboxStatus(ctx, sb.Id)
		if err != nil {
			if cri.IsNotFound(err) {
				continue // removed between list and status
			}
			return nil, fmt.Errorf("sandbox %s status: %w", sb.Id, err)
		}
		status.Sandboxes = append(status.Sandboxes, sandboxStatusFromCRI(st))
	}
	sortSandboxes(status.Sandboxes)
	for _, sb := range status.Sandboxes {
		if sb.Ready {
			status.IPs = sb.IPs
			break
		}
	}

	containers, err := m.cri.ListContainers(ctx, &runtimeapi.ContainerFilter{LabelSelector: selector})
	if err != nil {
		return nil, fmt.Errorf("list containers of pod %s: %w", uid, err)
	}
	for _, c := range containers {
		st, err := m.cri.ContainerStatus(ctx, c.Id)
		if err != nil {
			if cri.IsNotFound(err) {
				continue
			}
			return nil, fmt.Errorf("container %s status: %w", c.Id, err)
		}
		status.Containers = append(status.Containers, m.containerStatusFromCRI(st, c.PodSandboxId))
	}
	sortContainers(status.Containers)
	return status, nil
}

// GetPods lists the runtime's pods with two CRI calls, grouped by the pod UID label.
func (m *Manager) GetPods(ctx context.Context, all bool) ([]*container.RunningPod, error) {
	sandboxes, err := m.cri.ListPodSandbox(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("list sandboxes: %w", err)
	}
	containers, err := m.cri.ListContainers(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("list containers: %w", err)
	}
	pods := map[types.UID]*container.RunningPod{}
	podFor := func(labels map[string]string) *container.RunningPod {
		uid := types.UID(labels[container.LabelPodUID])
		if uid == "" {
			return nil // not a Kubernetes pod
		}
		p := pods[uid]
		if p == nil {
			p = &container.RunningPod{UID: uid, Name: labels[container.LabelPodName], Namespace: labels[container.LabelPodNamespace]}
			pods[uid] = p
		}
		return p
	}
	for _, sb := range sandboxes {
		if p := podFor(sb.Labels); p != nil {
			if node := sb.Labels[container.LabelNode]; node != "" {
				p.Node = node
			}
			p.Sandboxes = append(p.Sandboxes, &container.SandboxStatus{
				ID:        sb.Id,
				Ready:     sb.State == runtimeapi.PodSandboxState_SANDBOX_READY,
				CreatedAt: fromUnixNano(sb.CreatedAt),
				Attempt:   sb.GetMetadata().GetAttempt(),
			})
		}
	}
	for _, c := range containers {
		if p := podFor(c.Labels); p != nil {
			p.Containers = append(p.Containers, containerFromCRIListItem(c))
		}
	}
	out := make([]*container.RunningPod, 0, len(pods))
	for _, p := range pods {
		sortSandboxes(p.Sandboxes)
		sortContainers(p.Containers)
		if all || isRunning(p) {
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].UID < out[j].UID })
	return out, nil
}

// isRunning reports whether a pod has a running container or a ready sandbox.
func isRunning(p *container.RunningPod) bool {
	for _, c := range p.Containers {
		if c.State == container.StateRunning {
			return true
		}
	}
	for _, s := range p.Sandboxes {
		if s.Ready {
			return true
		}
	}
	return false
}

func sandboxStatusFromCRI(st *runtimeapi.PodSandboxStatus) *container.SandboxStatus {
	return &container.SandboxStatus{
		ID:        st.Id,
		Ready:     st.State == runtimeapi.PodSandboxState_SANDBOX_READY,
		CreatedAt: fromUnixNano(st.CreatedAt),
		Attempt:   st.GetMetadata().GetAttempt(),
		IPs:       sandboxIPs(st),
		HostNet:   st.GetLinux().GetNamespaces().GetOptions().GetNetwork() == runtimeapi.NamespaceMode_NODE,
	}
}

// containerStatusFromCRI converts a CRI status; for exited containers it reads the termination
// message.
func (m *Manager) containerStatusFromCRI(st *runtimeapi.ContainerStatus, sandboxID string) *container.ContainerStatus {
	cs := &container.ContainerStatus{
		ID:         st.Id,
		Name:       containerName(st.Labels, st.Metadata),
		SandboxID:  sandboxID,
		State:      stateFromCRI(st.State),
		CreatedAt:  fromUnixNano(st.CreatedAt),
		StartedAt:  fromUnixNano(st.StartedAt),
		FinishedAt: fromUnixNano(st.FinishedAt),
		ExitCode:   st.ExitCode,
		Reason:     st.Reason,
		Message:    st.Message,
		Image:      specImage(st.Annotations, st.GetImage()),
		ImageRef:   st.ImageRef,
		User:       containerUser(st),
		StopSignal: cri.APISignal(st.GetStopSignal()),
	}
	cs.Hash, cs.LegacyHash, cs.RestartCount = hashAndRestarts(st.Annotations)
	cs.Resources = resizeFromCRI(st.Resources)
	if cs.State == container.StateExited {
		if msg := m.terminationMessage(st, cs.ExitCode); msg != "" {
			cs.Message = msg
		}
	}
	return cs
}

func containerFromCRIListItem(c *runtimeapi.Container) *container.ContainerStatus {
	cs := &container.ContainerStatus{
		ID:        c.Id,
		Name:      containerName(c.Labels, c.Metadata),
		SandboxID: c.PodSandboxId,
		State:     stateFromCRI(c.State),
		CreatedAt: fromUnixNano(c.CreatedAt),
		Image:     specImage(c.Annotations, c.GetImage()),
		ImageRef:  c.ImageRef,
	}
	cs.Hash, cs.LegacyHash, cs.RestartCount = hashAndRestarts(c.Annotations)
	return cs
}

func containerName(labels map[string]string, md *runtimeapi.ContainerMetadata) string {
	if n := container.Value(labels, container.LabelContainerName, container.LegacyLabelContainerName); n != "" {
		return n
	}
	return md.GetName()
}

// specImage is the image as the pod spec names it: nodelet's own record, else what the
// runtime kept of the kubelet's request (the upstream kubelet asks for the resolved image and
// names the spec's in user_specified_image), else the runtime's image.
func specImage(annotations map[string]string, img *runtimeapi.ImageSpec) string {
	if name := annotations[container.AnnotationImage]; name != "" {
		return name
	}
	if name := img.GetUserSpecifiedImage(); name != "" {
		return name
	}
	return img.GetImage()
}

// hashAndRestarts reads the spec hash and restart count, from upstream's annotations or, on
// a container an older nodelet made, from its own (legacy says which hash it is).
func hashAndRestarts(annotations map[string]string) (hash uint64, legacy bool, restarts int) {
	value, ok := annotations[container.AnnotationHash]
	if !ok {
		value, legacy = annotations[container.LegacyAnnotationHash], true
	}
	hash, _ = strconv.ParseUint(value, 16, 64)
	restarts, _ = strconv.Atoi(container.Value(annotations, container.AnnotationRestarts, container.LegacyAnnotationRestarts))
	return hash, legacy, restarts
}

func stateFromCRI(s runtimeapi.ContainerState) container.ContainerState {
	switch s {
	case runtimeapi.ContainerState_CONTAINER_CREATED:
		return container.StateCreated
	case runtimeapi.ContainerState_CONTAINER_RUNNING:
		return container.StateRunning
	case runtimeapi.ContainerState_CONTAINER_EXITED:
		return container.StateExited
	}
	return container.StateUnknown
}

func fromUnixNano(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns)
}

// sortSandboxes orders newest first; attempts break ties of equal creation times.
func sortSandboxes(s []*container.SandboxStatus) {
	sort.SliceStable(s, func(i, j int) bool {
		if !s[i].CreatedAt.Equal(s[j].CreatedAt) {
			return s[i].CreatedAt.After(s[j].CreatedAt)
		}
		return s[i].Attempt > s[j].Attempt
	})
}

// sortContainers orders newest first; restart counts break ties of equal creation times.
func sortContainers(c []*container.ContainerStatus) {
	sort.SliceStable(c, func(i, j int) bool {
		if !c[i].CreatedAt.Equal(c[j].CreatedAt) {
			return c[i].CreatedAt.After(c[j].CreatedAt)
		}
		return c[i].RestartCount > c[j].RestartCount
	})
}
