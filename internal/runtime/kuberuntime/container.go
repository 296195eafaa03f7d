package kuberuntime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodelet/nodelet/internal/podspec/kubehash"
	"github.com/nodelet/nodelet/internal/podspec/objects"
	"github.com/nodelet/nodelet/internal/runtime/container"
	"github.com/nodelet/nodelet/internal/runtime/containeropts"
	"github.com/nodelet/nodelet/internal/runtime/runtimefeatures"
)

// managedBy marks containers nodelet created.
const managedBy = "nodelet"

// containerConfig builds the CRI config of one container instance. imageRef is what
// EnsureImage returned.
func (m *Manager) containerConfig(ctx context.Context, pod *v1.Pod, c *v1.Container, sb *sandboxInfo, restartCount int, imageRef string) (*runtimeapi.ContainerConfig, error) {
	env := containeropts.EnvSource{Objects: objects.NewLookups(m.objects), Pod: pod, PodIPs: sb.ips, NodeName: m.nodeName, HostIP: m.nodeIP, Capacity: m.capacity}
	if m.serviceEnv != nil {
		services, err := m.serviceEnv(pod)
		if err != nil {
			return nil, err
		}
		env.Services = services
	}
	if pod.Spec.HostNetwork && env.HostIP == "" && len(sb.ips) > 0 {
		env.HostIP = sb.ips[0]
	}
	envs, vars, err := containeropts.ContainerEnv(ctx, env, c)
	if err != nil {
		return nil, err
	}
	cmd, args := containeropts.ExpandCommand(c, vars)
	images, _ := sb.imageVolumes.forContainer(c) // startContainer held it back if one failed
	mounts, err := m.mounts.ContainerMounts(pod, c, sb.ips, vars, images, func() bool { return m.supportsRecursiveReadOnly(pod) })
	if errors.Is(err, container.ErrRecursiveReadOnlyUnsupported) { // upstream's message, then what would lift it
		return nil, fmt.Errorf("%w (%s)", err, m.features.Lacking(runtimefeatures.RecursiveReadOnlySince))
	}
	if err != nil {
		return nil, err
	}
	devices, err := m.mounts.VolumeDevices(pod, c)
	if err != nil {
		return nil, err
	}
	logPath := filepath.Join(c.Name, strconv.Itoa(restartCount)+".log")
	if err := os.MkdirAll(filepath.Join(sb.config.LogDirectory, c.Name), 0o755); err != nil {
		return nil, fmt.Errorf("create container log directory: %w", err)
	}
	annotations, err := containerAnnotations(pod, c, restartCount)
	if err != nil {
		return nil, err
	}
	sc := containeropts.ContainerSecurity(pod, c, m.seccomp())
	if err := m.verifyRunAsNonRoot(ctx, pod, c, sc, imageRef); err != nil {
		return nil, err
	}
	if sc.SupplementalGroupsPolicy, err = supplementalGroupsPolicy(pod.Spec.SecurityContext); err != nil {
		return nil, err
	}
	cfg := &runtimeapi.ContainerConfig{
		Metadata:    &runtimeapi.ContainerMetadata{Name: c.Name, Attempt: uint32(restartCount)},
		Image:       &runtimeapi.ImageSpec{Image: imageRef, UserSpecifiedImage: c.Image},
		Command:     cmd,
		Args:        args,
		WorkingDir:  c.WorkingDir,
		Envs:        envs,
		Mounts:      mounts,
		Devices:     devices,
		Labels:      containerLabels(pod, c),
		Annotations: annotations,
		LogPath:     logPath,
		Stdin:       c.Stdin,
		StdinOnce:   c.StdinOnce,
		Tty:         c.TTY,
		Linux: &runtimeapi.LinuxContainerConfig{
			Resources:       m.containerResources(pod, c),
			SecurityContext: sc,
		},
	}
	if m.stopSignals {
		cfg.StopSignal = toCRISignal(c)
	}
	// The hooks come before the user namespace: mounts they add get the pod's ID mapping too.
	if err := m.hooks.ApplyContainer(ctx, pod, c, cfg); err != nil {
		return nil, err
	}
	useSandboxUserNamespace(cfg, sb)
	return cfg, nil
}

func containerLabels(pod *v1.Pod, c *v1.Container) map[string]string {
	labels := map[string]string{
		container.LabelPodName:       pod.Name,
		container.LabelPodNamespace:  pod.Namespace,
		container.LabelPodUID:        string(pod.UID),
		container.LabelContainerName: c.Name,
		container.LabelManagedBy:     managedBy,
	}
	if pod.Spec.NodeName != "" {
		labels[container.LabelNode] = pod.Spec.NodeName
	}
	return labels
}

// containerAnnotations carry what status and kill need later without the pod spec, as the
// upstream kubelet writes them: the spec hash, restart count, termination message settings,
// grace periods, preStop handler and ports.
func containerAnnotations(pod *v1.Pod, c *v1.Container, restartCount int) (map[string]string, error) {
	policy := c.TerminationMessagePolicy
	if policy == "" {
		policy = v1.TerminationMessageReadFile
	}
	a := map[string]string{
		container.AnnotationHash:       kubehash.FormatHash(kubehash.ContainerHash(c)),
		container.AnnotationRestarts:   strconv.Itoa(restartCount),
		container.AnnotationTermPath:   containeropts.TerminationMessagePath(c),
		container.AnnotationTermPolicy: string(policy),
		container.AnnotationImage:      c.Image,
	}
	if pod.DeletionGracePeriodSeconds != nil {
		a[container.AnnotationDeletionGrace] = strconv.FormatInt(*pod.DeletionGracePeriodSeconds, 10)
	}
	if pod.Spec.TerminationGracePeriodSeconds != nil {
		a[container.AnnotationGrace] = strconv.FormatInt(*pod.Spec.TerminationGracePeriodSeconds, 10)
	}
	if len(c.Ports) > 0 {
		data, err := json.Marshal(c.Ports)
		if err != nil {
			return nil, fmt.Errorf("encode ports: %w", err)
		}
		a[container.AnnotationPorts] = string(data)
	}
	if c.Lifecycle != nil && c.Lifecycle.PreStop != nil {
		data, err := json.Marshal(c.Lifecycle.PreStop)
		if err != nil {
			return nil, fmt.Errorf("encode preStop handler: %w", err)
		}
		a[container.AnnotationPreStop] = string(data)
	}
	return a, nil
}
