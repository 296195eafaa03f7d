package streaming

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/internal/podspec/podutil"
	"github.com/nodelet/nodelet/internal/runtime/cri"
)

// streamOptions are the standard streams a client asks exec or attach for.
type streamOptions struct {
	stdin, stdout, stderr, tty bool
}

// parseStreamOptions reads which streams the client wants. The API server sends the
// kubelet's names input, output, error and tty (value "1"); the pod API's names stdin,
// stdout and stderr, and the value "true", are accepted too for direct clients. A TTY merges
// stderr into stdout, so stderr is dropped with tty.
func parseStreamOptions(r *http.Request) (streamOptions, error) {
	opts := streamOptions{
		stdin:  flag(r, v1.ExecStdinParam, "stdin"),
		stdout: flag(r, v1.ExecStdoutParam, "stdout"),
		stderr: flag(r, v1.ExecStderrParam, "stderr"),
		tty:    flag(r, v1.ExecTTYParam),
	}
	if opts.tty && opts.stderr {
		opts.stderr = false
	}
	if !opts.stdin && !opts.stdout && !opts.stderr {
		return opts, errorf(http.StatusBadRequest, "you must specify at least 1 of stdin, stdout, stderr")
	}
	return opts, nil
}

// flag reports whether any of the named parameters (query or form body) is "1" or "true".
func flag(r *http.Request, names ...string) bool {
	for _, name := range names {
		if v := r.FormValue(name); v == "1" || strings.EqualFold(v, "true") {
			return true
		}
	}
	return false
}

// requireUpgrade rejects plain requests before any runtime call: the streams only exist on an
// upgraded (SPDY or WebSocket) connection.
func requireUpgrade(r *http.Request) error {
	if !isUpgrade(r) {
		return errorf(http.StatusBadRequest, "Upgrade request required")
	}
	return nil
}

func (s *server) serveExec(w http.ResponseWriter, r *http.Request) {
	opts, err := parseStreamOptions(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	cmd := r.URL.Query()[v1.ExecCommandParam]
	if len(cmd) == 0 {
		cmd = r.PostForm[v1.ExecCommandParam] // a form body, parsed by FormValue above
	}
	if len(cmd) == 0 {
		writeError(w, r, errorf(http.StatusBadRequest, "missing %q parameter: nothing to execute", v1.ExecCommandParam))
		return
	}
	pod, name, id, err := s.upgradeTarget(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	resp, err := s.runtime.Exec(r.Context(), &cri.ExecRequest{
		ContainerId: id, Cmd: cmd, Tty: opts.tty, Stdin: opts.stdin, Stdout: opts.stdout, Stderr: opts.stderr,
	})
	if err != nil {
		writeError(w, r, err)
		return
	}
	klog.V(2).InfoS("Exec", "pod", klog.KObj(pod), "container", name, "command", cmd, "tty", opts.tty, "stdin", opts.stdin)
	s.proxy(w, r, resp.Url)
}

func (s *server) serveAttach(w http.ResponseWriter, r *http.Request) {
	opts, err := parseStreamOptions(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	pod, name, id, err := s.upgradeTarget(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	// Whether the process has a terminal was fixed when the container started, so the spec
	// decides it, not the request.
	spec := podutil.FindAnyContainer(pod, name)
	if spec == nil {
		writeError(w, r, errorf(http.StatusInternalServerError, "container %s not found in pod %s/%s", name, pod.Namespace, pod.Name))
		return
	}
	resp, err := s.runtime.Attach(r.Context(), &cri.AttachRequest{
		ContainerId: id, Tty: spec.TTY, Stdin: opts.stdin, Stdout: opts.stdout, Stderr: opts.stderr,
	})
	if err != nil {
		writeError(w, r, err)
		return
	}
	klog.V(2).InfoS("Attach", "pod", klog.KObj(pod), "container", name, "tty", spec.TTY, "stdin", opts.stdin)
	s.proxy(w, r, resp.Url)
}

func (s *server) servePortForward(w http.ResponseWriter, r *http.Request) {
	if err := requireUpgrade(r); err != nil {
		writeError(w, r, err)
		return
	}
	// SPDY clients name the port in each stream's headers, which the runtime reads; the
	// WebSocket protocol has one connection per request, so its ports come in the query.
	var ports []int32
	if isWebSocket(r) {
		var err error
		if ports, err = parsePorts(r.URL.Query()[v1.PortHeader]); err != nil {
			writeError(w, r, err)
			return
		}
	}
	pod, err := s.lookupPod(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	sandboxID, err := s.readySandbox(r.Context(), pod)
	if err != nil {
		writeError(w, r, err)
		return
	}
	resp, err := s.runtime.PortForward(r.Context(), &cri.PortForwardRequest{PodSandboxId: sandboxID, Port: ports})
	if err != nil {
		writeError(w, r, err)
		return
	}
	klog.V(2).InfoS("Port-forward", "pod", klog.KObj(pod), "ports", ports)
	s.proxy(w, r, resp.Url)
}

// parsePorts parses the WebSocket port-forward "port" parameters.
func parsePorts(values []string) ([]int32, error) {
	if len(values) == 0 {
		return nil, errorf(http.StatusBadRequest, "query parameter %q is required", v1.PortHeader)
	}
	ports := make([]int32, 0, len(values))
	for _, v := range values {
		for _, p := range strings.Split(v, ",") {
			n, err := strconv.ParseUint(p, 10, 16)
			if err != nil {
				return nil, errorf(http.StatusBadRequest, "unable to parse %q as a port: %v", p, err)
			}
			if n == 0 {
				return nil, errorf(http.StatusBadRequest, "port %q must be > 0", p)
			}
			ports = append(ports, int32(n))
		}
	}
	return ports, nil
}

// serveRun runs the space-separated "cmd" in the container and answers with its stdout
// followed by its stderr. A non-zero exit is a 500 naming the code, as upstream.
func (s *server) serveRun(w http.ResponseWriter, r *http.Request) {
	pod, err := s.lookupPod(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	cmd := strings.Fields(r.FormValue("cmd"))
	if len(cmd) == 0 {
		writeError(w, r, errorf(http.StatusBadRequest, `missing "cmd" parameter: nothing to run`))
		return
	}
	name := r.PathValue("container")
	id, err := s.runningContainer(r.Context(), pod, name)
	if err != nil {
		writeError(w, r, err)
		return
	}
	klog.V(2).InfoS("Run", "pod", klog.KObj(pod), "container", name, "command", cmd)
	stdout, stderr, code, err := s.runtime.ExecSync(r.Context(), id, cmd, 0)
	if err != nil {
		writeError(w, r, err)
		return
	}
	if code != 0 {
		writeError(w, r, fmt.Errorf("command '%s' exited with %d: %s", strings.Join(cmd, " "), code, stderr))
		return
	}
	// The upstream kubelet labels this raw output as JSON; kept for clients that check.
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(append(stdout, stderr...))
}

// upgradeTarget checks that r asks for a stream and finds the running container it names.
func (s *server) upgradeTarget(r *http.Request) (pod *v1.Pod, name, id string, err error) {
	if err := requireUpgrade(r); err != nil {
		return nil, "", "", err
	}
	if pod, err = s.lookupPod(r); err != nil {
		return nil, "", "", err
	}
	name = r.PathValue("container")
	if id, err = s.runningContainer(r.Context(), pod, name); err != nil {
		return nil, "", "", err
	}
	return pod, name, id, nil
}
