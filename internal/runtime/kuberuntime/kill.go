package kuberuntime

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/internal/lib/fsutil"
	"github.com/nodelet/nodelet/internal/podspec/podutil"
	"github.com/nodelet/nodelet/internal/podspec/timeline"
	"github.com/nodelet/nodelet/internal/runtime/container"
	"github.com/nodelet/nodelet/internal/runtime/cri"
)

const (
	// minGracePeriod is the least time a container gets to stop, preStop hook included.
	minGracePeriod     = 2 * time.Second
	defaultGracePeriod = 30 * time.Second
)

// KillPod stops every running container in parallel (preStop first, then StopContainer with
// what is left of the grace period; sidecars only after the app containers, see killOrder)
// and then every sandbox. gracePeriod < 0 means the pod's own terminationGracePeriodSeconds.
// Any failure is returned so the caller retries.
func (m *Manager) KillPod(ctx context.Context, pod *v1.Pod, running *container.RunningPod, gracePeriod int64) error {
	if running == nil {
		if pod == nil {
			return errors.New("KillPod: neither pod nor running pod given")
		}
		st, err := m.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
		if err != nil {
			return err
		}
		running = &container.RunningPod{UID: st.UID, Name: st.Name, Namespace: st.Namespace, Sandboxes: st.Sandboxes, Containers: st.Containers}
	}
	if pod == nil {
		pod = &v1.Pod{ObjectMeta: metav1ObjectMeta(running)}
	}
	m.step(pod, timeline.KillRequested, "", "", fmt.Sprintf("grace period %ds", gracePeriod), time.Now(), nil)
	var toStop []*container.ContainerStatus
	for _, c := range running.Containers {
		if c.State == container.StateRunning || c.State == container.StateUnknown {
			toStop = append(toStop, c)
		}
	}
	stopDone := m.begin(pod, timeline.Stopped, "", "StopContainer/StopPodSandbox", fmt.Sprintf("%d containers", len(toStop)))
	errs := make([]error, len(toStop))
	order := newKillOrder(pod, toStop)
	var wg sync.WaitGroup
	for i, c := range toStop {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = m.killContainer(ctx, pod, running, c, gracePeriod, "", order)
		}()
	}
	wg.Wait()
	for _, sb := range running.Sandboxes {
		if err := m.cri.StopPodSandbox(ctx, sb.ID); err != nil && !cri.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("stop sandbox %s: %w", sb.ID, err))
		}
	}
	err := errors.Join(errs...)
	stopDone("", err)
	if err != nil {
		return fmt.Errorf("kill pod %s/%s: %w", running.Namespace, running.Name, err)
	}
	return nil
}

// killContainer runs the container's preStop hook and stops it within the grace period,
// once order (nil: none) says it is its turn. message, when set, replaces the default Killing
// event text.
func (m *Manager) killContainer(ctx context.Context, pod *v1.Pod, running *container.RunningPod, c *container.ContainerStatus, gracePeriod int64, message string, order *killOrder) error {
	spec := podutil.FindContainer(pod, c.Name)
	var preStop *v1.LifecycleHandler
	if spec != nil && spec.Lifecycle != nil {
		preStop = spec.Lifecycle.PreStop
	}
	if spec == nil || gracePeriod < 0 {
		// Without the spec (orphaned pod) the container's annotations say what it needs.
		st, err := m.cri.ContainerStatus(ctx, c.ID)
		if err != nil && !cri.IsNotFound(err) {
			return fmt.Errorf("container %s status: %w", c.ID, err)
		}
		if st != nil && spec == nil {
			preStop = decodePreStop(container.Value(st.Annotations, container.AnnotationPreStop, container.LegacyAnnotationPreStop))
		}
		if st != nil && gracePeriod < 0 {
			gracePeriod = annotatedGrace(pod, st.Annotations)
		}
	}
	grace := max(time.Duration(gracePeriod)*time.Second, minGracePeriod)
	if gracePeriod < 0 {
		grace = defaultGracePeriod
	}
	ref := container.ContainerRef(pod, &v1.Container{Name: c.Name})
	if message == "" {
		message = fmt.Sprintf("Stopping container %s", c.Name)
	}
	m.recorder.Event(ref, v1.EventTypeNormal, "Killing", message)

	if preStop != nil && c.State == container.StateRunning {
		start := time.Now()
		m.runPreStop(ctx, pod, running, c, spec, preStop, grace)
		grace -= time.Since(start)
	}
	// A container waits for its turn (sidecars after the app containers) only while grace is
	// left, as upstream: those whose preStop hooks used it all stop at once, side by side. A
	// forced kill (grace 0) stops everything at once.
	if gracePeriod != 0 && grace > 0 {
		grace -= order.wait(c.Name, grace)
	}
	grace = max(grace, minGracePeriod)
	secs := int64((grace + time.Second - 1) / time.Second)
	klog.V(2).InfoS("Stopping container", "pod", klog.KObj(pod), "container", c.Name, "id", c.ID, "gracePeriod", secs)
	if err := m.cri.StopContainer(ctx, c.ID, secs); err != nil && !cri.IsNotFound(err) {
		return fmt.Errorf("stop container %s (%s): %w", c.Name, c.ID, err)
	}
	order.done(c.Name)
	return nil
}

// annotatedGrace is the pod's grace period from its spec or, for an orphan, the container's
// annotations (the deletion's grace period first, as upstream); -1 when none says.
func annotatedGrace(pod *v1.Pod, annotations map[string]string) int64 {
	if pod.Spec.TerminationGracePeriodSeconds != nil {
		return *pod.Spec.TerminationGracePeriodSeconds
	}
	for _, key := range []string{container.AnnotationDeletionGrace, container.AnnotationGrace} {
		if g, err := strconv.ParseInt(annotations[key], 10, 64); err == nil {
			return g
		}
	}
	return -1
}

func metav1ObjectMeta(p *container.RunningPod) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, UID: p.UID}
}

// RemovePod deletes all of the pod's containers and sandboxes and then the files the runtime
// keeps for it. The pod's directory goes too when nothing else is left in it; its volumes are
// the volume manager's to remove.
func (m *Manager) RemovePod(ctx context.Context, uid types.UID) error {
	selector := map[string]string{container.LabelPodUID: string(uid)}
	var errs []error
	containers, err := m.cri.ListContainers(ctx, &runtimeapi.ContainerFilter{LabelSelector: selector})
	if err != nil {
		return fmt.Errorf("list containers of pod %s: %w", uid, err)
	}
	for _, c := range containers {
		if err := m.cri.RemoveContainer(ctx, c.Id); err != nil && !cri.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("remove container %s: %w", c.Id, err))
		}
	}
	sandboxes, err := m.cri.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: selector})
	if err != nil {
		return fmt.Errorf("list sandboxes of pod %s: %w", uid, err)
	}
	for _, sb := range sandboxes {
		// A sandbox must be stopped before removal; stopping is idempotent.
		if err := m.cri.StopPodSandbox(ctx, sb.Id); err != nil && !cri.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("stop sandbox %s: %w", sb.Id, err))
			continue
		}
		if err := m.cri.RemovePodSandbox(ctx, sb.Id); err != nil && !cri.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("remove sandbox %s: %w", sb.Id, err))
		}
	}
	if len(errs) > 0 {
		// Keep the pod's files while the runtime may still use them.
		return fmt.Errorf("remove pod %s: %w", uid, errors.Join(errs...))
	}
	if err := fsutil.CheckName(string(uid)); err != nil {
		// Never a host path from a UID that could leave the pods directory.
		return fmt.Errorf("remove pod files: pod UID %w", err)
	}
	errs = append(errs, m.removePodFiles(uid))
	errs = append(errs, m.removePodLogDirs(uid))
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("remove pod %s files: %w", uid, err)
	}
	m.logLinks.RemoveDangling()
	m.forgetPod(uid)
	return nil
}

// forgetPod drops the unused pre-pull outcomes of a removed pod (its image pull state is the
// image manager's, released with the pod's other state).
func (m *Manager) forgetPod(uid types.UID) {
	prefix := string(uid) + "/"
	m.prepulled.RemoveAll(func(k any) bool { return strings.HasPrefix(k.(string), prefix) })
}

// removePodFiles removes the hosts file and termination message files of pod uid, and its
// directory if that leaves it empty. It never descends into what else is there, nor into
// another mount: a volume may still be mounted below.
func (m *Manager) removePodFiles(uid types.UID) error {
	podsDir := filepath.Join(m.rootDir, "pods")
	if err := fsutil.RemoveIn(podsDir, string(uid), "etc-hosts"); err != nil {
		return err
	}
	if err := fsutil.RemoveAllIn(podsDir, string(uid), "containers"); err != nil {
		return err
	}
	if err := fsutil.RemoveIn(podsDir, string(uid)); err != nil && !errors.Is(err, syscall.ENOTEMPTY) {
		return err
	}
	return nil
}

// removePodLogDirs removes the <namespace>_<name>_<uid> log directories of pod uid.
func (m *Manager) removePodLogDirs(uid types.UID) error {
	entries, err := os.ReadDir(m.podLogsDir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	var errs []error
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), "_"+string(uid)) {
			errs = append(errs, fsutil.RemoveAllIn(m.podLogsDir, e.Name()))
		}
	}
	return errors.Join(errs...)
}
