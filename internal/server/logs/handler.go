package logs

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/internal/runtime/container"
)

// PodLookup finds desired pods by namespace and name (*pod.Manager).
type PodLookup interface {
	GetByName(namespace, name string) (*v1.Pod, bool)
}

// ContainerLogs resolves a container's log file and state (runtime.LogService).
type ContainerLogs interface {
	ContainerLog(ctx context.Context, containerID string) (*container.ContainerLog, error)
}

// Deps are what the container logs handler reads.
type Deps struct {
	Pods PodLookup
	// Status reads the runtime's view of a pod, containers newest first
	// (kuberuntime.Manager.GetPodStatus).
	Status  func(ctx context.Context, uid types.UID, name, namespace string) (*container.PodStatus, error)
	Runtime ContainerLogs
}

// NewContainerLogsHandler serves /containerLogs/{namespace}/{pod}/{container} with the query
// parameters of v1.PodLogOptions: follow, tailLines (or the old tail), sinceSeconds,
// sinceTime, timestamps, previous, limitBytes and stream.
func NewContainerLogsHandler(deps Deps) http.Handler {
	return &containerLogsHandler{deps: deps, now: time.Now}
}

type containerLogsHandler struct {
	deps Deps
	now  func() time.Time
}

func (h *containerLogsHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	namespace, podName, container := r.PathValue("namespace"), r.PathValue("pod"), r.PathValue("container")
	switch {
	case podName == "":
		http.Error(w, `{"message": "Missing podID."}`, http.StatusBadRequest)
		return
	case container == "":
		http.Error(w, `{"message": "Missing container name."}`, http.StatusBadRequest)
		return
	case namespace == "":
		http.Error(w, `{"message": "Missing podNamespace."}`, http.StatusBadRequest)
		return
	}
	apiOpts, err := decodeLogOptions(r.URL.Query())
	if err != nil {
		klog.V(2).InfoS("Bad container logs query", "query", r.URL.RawQuery, "err", err)
		http.Error(w, `{"message": "Unable to decode query."}`, http.StatusBadRequest)
		return
	}
	if err := validateLogOptions(apiOpts); err != nil {
		klog.V(2).InfoS("Invalid container logs query", "query", r.URL.RawQuery, "err", err)
		http.Error(w, `{"message": "Invalid request."}`, http.StatusUnprocessableEntity)
		return
	}
	pod, ok := h.deps.Pods.GetByName(namespace, podName)
	if !ok {
		http.Error(w, fmt.Sprintf("pod %q does not exist", podName), http.StatusNotFound)
		return
	}
	if !hasContainer(pod, container) {
		http.Error(w, fmt.Sprintf("container %q not found in pod %q", container, podName), http.StatusNotFound)
		return
	}
	reader, err := h.open(r.Context(), pod, container, apiOpts)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	defer reader.Close()
	h.stream(r.Context(), w, reader)
}

// open finds the container instance to read and opens its log file.
func (h *containerLogsHandler) open(ctx context.Context, pod *v1.Pod, container string, apiOpts *v1.PodLogOptions) (*Reader, error) {
	status, err := h.deps.Status(ctx, pod.UID, pod.Name, pod.Namespace)
	if err != nil {
		return nil, fmt.Errorf("failed to get status of pod %q: %w", pod.Name, err)
	}
	instance, err := pickInstance(pod, status, container, apiOpts.Previous)
	if err != nil {
		return nil, err
	}
	logFile, err := h.deps.Runtime.ContainerLog(ctx, instance.ID)
	if err != nil {
		return nil, fmt.Errorf("unable to retrieve container logs for %s: %w", instance.ID, err)
	}
	if logFile.Path == "" {
		return nil, fmt.Errorf("container %q in pod %q has no log file", container, pod.Name)
	}
	opts := readerOptions(apiOpts, h.now())
	if opts.Follow {
		opts.Running = h.runningFunc(instance.ID)
	}
	return Open(logFile.Path, opts)
}

// stream writes the log. Following, every write is flushed so clients see lines as they
// come, and the headers go out at once so a quiet container does not look like a hang.
func (h *containerLogsHandler) stream(ctx context.Context, w http.ResponseWriter, reader *Reader) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	var out io.Writer
	var buffered *bufio.Writer
	if reader.opts.Follow {
		fw := &flushWriter{w: w, rc: http.NewResponseController(w)}
		fw.flush()
		out = fw
	} else {
		buffered = bufio.NewWriterSize(w, 32*1024)
		out = buffered
	}
	err := reader.Copy(ctx, out)
	if buffered != nil && err == nil {
		err = buffered.Flush()
	}
	if err != nil && ctx.Err() == nil {
		klog.V(2).InfoS("Container log stream ended", "path", reader.path, "err", err)
	}
}

// runningFunc asks the runtime whether the container still runs; a container the runtime
// no longer knows has stopped.
func (h *containerLogsHandler) runningFunc(containerID string) func(context.Context) (bool, error) {
	return func(ctx context.Context) (bool, error) {
		c, err := h.deps.Runtime.ContainerLog(ctx, containerID)
		if errors.Is(err, container.ErrContainerNotFound) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		return c.State == container.StateRunning, nil
	}
}

// flushWriter flushes after every write.
type flushWriter struct {
	w  io.Writer
	rc *http.ResponseController
}

func (f *flushWriter) Write(p []byte) (int, error) {
	n, err := f.w.Write(p)
	if err == nil {
		err = f.flush()
	}
	return n, err
}

func (f *flushWriter) flush() error {
	if err := f.rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return err
	}
	return nil
}

func hasContainer(pod *v1.Pod, name string) bool {
	for _, c := range pod.Spec.InitContainers {
		if c.Name == name {
			return true
		}
	}
	for _, c := range pod.Spec.Containers {
		if c.Name == name {
			return true
		}
	}
	for _, c := range pod.Spec.EphemeralContainers {
		if c.Name == name {
			return true
		}
	}
	return false
}
