package prober

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/internal/podspec/podutil"
	"github.com/nodelet/nodelet/internal/runtime/container"
	"github.com/nodelet/nodelet/internal/runtime/handlerio"
)

// outcome is what one handler run found. warning marks a success worth an event (an HTTP
// redirect that was not followed).
type outcome struct {
	res     result
	output  string
	warning bool
}

// runProbe runs the worker's handler once, records the Unhealthy/ProbeWarning event and the
// metric, and returns the result.
func (w *worker) runProbe(ctx context.Context, pod *v1.Pod, st *v1.PodStatus) result {
	spec := findContainer(pod, w.key.container)
	timeout := time.Duration(w.probe.TimeoutSeconds) * w.m.unit
	probeCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	out, err := w.m.handle(probeCtx, w.probe, spec, st.PodIP, w.containerID, timeout)
	if ctx.Err() != nil {
		return unknown // stopped while probing
	}
	kind := w.key.kind.String()
	ref := container.ContainerRef(pod, &v1.Container{Name: w.key.container})
	metric := "successful"
	switch {
	case err != nil:
		out.res, metric = unknown, "unknown"
		w.m.deps.Recorder.Eventf(ref, v1.EventTypeWarning, "Unhealthy", "%s probe errored: %v", kind, err)
		klog.V(1).InfoS("Probe errored", "probeType", kind, "pod", klog.KObj(pod), "container", w.key.container, "err", err)
	case out.res == failure:
		metric = "failed"
		w.m.deps.Recorder.Eventf(ref, v1.EventTypeWarning, "Unhealthy", "%s probe failed: %s", kind, out.output)
		klog.V(1).InfoS("Probe failed", "probeType", kind, "pod", klog.KObj(pod), "container", w.key.container, "output", out.output)
	case out.warning:
		w.m.deps.Recorder.Eventf(ref, v1.EventTypeWarning, "ProbeWarning", "%s probe warning: %s", kind, out.output)
	}
	if w.m.deps.OnResult != nil {
		w.m.deps.OnResult(kind, metric, pod, w.key.container)
	}
	return out.res
}

// handle dispatches to the probe's handler. err reports a probe that could not be run at all
// (bad port, no pod IP, runtime error): its result says nothing about the container.
func (m *Manager) handle(ctx context.Context, p *v1.Probe, spec *v1.Container, podIP, containerID string, timeout time.Duration) (outcome, error) {
	switch {
	case p.Exec != nil:
		return m.execProbe(ctx, p.Exec.Command, containerID, timeout)
	case p.HTTPGet != nil:
		port, err := resolvePort(p.HTTPGet.Port, spec)
		if err != nil {
			return outcome{}, err
		}
		host, err := probeHost(p.HTTPGet.Host, podIP)
		if err != nil {
			return outcome{}, err
		}
		return m.httpProbe(ctx, p.HTTPGet, host, port)
	case p.TCPSocket != nil:
		port, err := resolvePort(p.TCPSocket.Port, spec)
		if err != nil {
			return outcome{}, err
		}
		host, err := probeHost(p.TCPSocket.Host, podIP)
		if err != nil {
			return outcome{}, err
		}
		return tcpProbe(ctx, net.JoinHostPort(host, strconv.Itoa(port))), nil
	case p.GRPC != nil:
		host, err := probeHost("", podIP)
		if err != nil {
			return outcome{}, err
		}
		service := ""
		if p.GRPC.Service != nil {
			service = *p.GRPC.Service
		}
		return grpcProbe(ctx, net.JoinHostPort(host, strconv.Itoa(int(p.GRPC.Port))), service, timeout), nil
	}
	return outcome{}, errors.New("probe has no handler")
}

// execProbe runs the command in the container: exit 0 passes, anything else fails with the
// command's output; running past the timeout fails too.
func (m *Manager) execProbe(ctx context.Context, cmd []string, containerID string, timeout time.Duration) (outcome, error) {
	if m.deps.Exec == nil {
		return outcome{}, errors.New("exec probes are not supported")
	}
	stdout, stderr, code, err := m.deps.Exec(ctx, podutil.BareContainerID(containerID), cmd, timeout)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) || status.Code(err) == codes.DeadlineExceeded {
			return outcome{res: failure, output: fmt.Sprintf("command %q timed out", strings.Join(cmd, " "))}, nil
		}
		return outcome{}, err
	}
	output := handlerio.ExecOutput(stdout, stderr)
	if code != 0 {
		return outcome{res: failure, output: output}, nil
	}
	return outcome{res: success, output: output}, nil
}

// tcpProbe passes when a connection opens before the deadline.
func tcpProbe(ctx context.Context, addr string) outcome {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return outcome{res: failure, output: err.Error()}
	}
	_ = conn.Close()
	return outcome{res: success}
}

// resolvePort turns a probe port, a number or the name of one of the container's ports, into
// a port number.
func resolvePort(port intstr.IntOrString, spec *v1.Container) (int, error) {
	n := port.IntValue()
	if port.Type == intstr.String {
		n = -1
		if spec != nil {
			for _, p := range spec.Ports {
				if p.Name == port.StrVal {
					n = int(p.ContainerPort)
				}
			}
		}
		if n < 0 {
			return 0, fmt.Errorf("couldn't find port: %v", port.StrVal)
		}
	}
	if n <= 0 || n > 65535 {
		return 0, fmt.Errorf("invalid port number: %v", n)
	}
	return n, nil
}

func probeHost(host, podIP string) (string, error) {
	if host != "" {
		return host, nil
	}
	if podIP == "" {
		return "", errors.New("pod has no IP yet")
	}
	return podIP, nil
}
