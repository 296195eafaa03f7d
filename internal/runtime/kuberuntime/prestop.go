package kuberuntime

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/internal/runtime/container"
	"github.com/nodelet/nodelet/internal/runtime/handlerio"
)

// preStopOverrun is how long a preStop hook may go on past its grace period: the container's
// stop ends it first (its processes die with the container); this only bounds the call.
const preStopOverrun = time.Minute

// runPreStop runs a preStop handler (exec, httpGet or sleep) and waits for it at most grace.
// As upstream, a hook still running then is left to run: the container's stop ends it (an
// exec timed out by the runtime at the grace would be killed before the container is).
// A failure is reported (FailedPreStopHook) whenever the hook ends. tcpSocket handlers do
// nothing, as upstream.
func (m *Manager) runPreStop(ctx context.Context, pod *v1.Pod, running *container.RunningPod, c *container.ContainerStatus, spec *v1.Container, h *v1.LifecycleHandler, grace time.Duration) {
	// The hook's call outlives this wait, so it does not end with ctx; runHandler bounds it.
	hookCtx := context.WithoutCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		podIP := func() (string, error) { return m.podIP(hookCtx, running) }
		if err := m.runHandler(hookCtx, c.ID, spec, h, podIP, grace+preStopOverrun); err != nil {
			ref := container.ContainerRef(pod, &v1.Container{Name: c.Name})
			m.recorder.Eventf(ref, v1.EventTypeWarning, "FailedPreStopHook", "PreStopHook failed: %v", err)
			klog.InfoS("PreStop hook failed", "pod", klog.KObj(pod), "container", c.Name, "err", err)
		}
	}()
	timer := time.NewTimer(grace)
	defer timer.Stop()
	select {
	case <-done:
	case <-timer.C:
		klog.V(2).InfoS("PreStop hook not completed in grace period", "pod", klog.KObj(pod), "container", c.Name, "gracePeriod", grace)
	case <-ctx.Done():
	}
}

// runHandler runs a lifecycle handler against container id within timeout; podIP gives the
// address an httpGet without a host goes to.
func (m *Manager) runHandler(ctx context.Context, id string, spec *v1.Container, h *v1.LifecycleHandler, podIP func() (string, error), timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	switch {
	case h.Exec != nil:
		stdout, stderr, exitCode, err := m.cri.ExecSync(ctx, id, h.Exec.Command, timeout)
		if err != nil {
			return err
		}
		if exitCode != 0 {
			return fmt.Errorf("command %q exited with %d: %s", h.Exec.Command, exitCode,
				strings.TrimSpace(handlerio.ExecOutput(stdout, stderr)))
		}
		return nil
	case h.HTTPGet != nil:
		return handlerHTTP(ctx, podIP, spec, h.HTTPGet)
	case h.Sleep != nil:
		select {
		case <-time.After(time.Duration(h.Sleep.Seconds) * time.Second):
		case <-ctx.Done():
		}
		return nil
	}
	return nil
}

// handlerHTTP sends the handler's GET to the pod IP (or the handler's host).
func handlerHTTP(ctx context.Context, podIP func() (string, error), spec *v1.Container, g *v1.HTTPGetAction) error {
	host := g.Host
	if host == "" {
		ip, err := podIP()
		if err != nil {
			return err
		}
		host = ip
	}
	port, err := resolvePort(g.Port.String(), spec)
	if err != nil {
		return err
	}
	return handlerio.HookGet(ctx, g, host, port)
}

// podIP reads the IP of the pod's ready sandbox; list results carry no IPs.
func (m *Manager) podIP(ctx context.Context, running *container.RunningPod) (string, error) {
	for _, sb := range running.Sandboxes {
		if len(sb.IPs) > 0 {
			return sb.IPs[0], nil
		}
		if !sb.Ready {
			continue
		}
		st, err := m.cri.PodSandboxStatus(ctx, sb.ID)
		if err != nil {
			return "", err
		}
		if ips := sandboxIPs(st); len(ips) > 0 {
			return ips[0], nil
		}
	}
	return "", fmt.Errorf("pod has no IP")
}

// resolvePort turns a port number or a container port name into a number.
func resolvePort(port string, spec *v1.Container) (int, error) {
	if n, err := strconv.Atoi(port); err == nil {
		return n, nil
	}
	if spec != nil {
		for _, p := range spec.Ports {
			if p.Name == port {
				return int(p.ContainerPort), nil
			}
		}
	}
	return 0, fmt.Errorf("cannot resolve port %q", port)
}

func decodePreStop(data string) *v1.LifecycleHandler {
	if data == "" {
		return nil
	}
	h := &v1.LifecycleHandler{}
	if err := json.Unmarshal([]byte(data), h); err != nil {
		return nil
	}
	return h
}
