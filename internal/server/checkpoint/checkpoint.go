// Package checkpoint serves the kubelet API's container checkpoint endpoint,
// POST /checkpoint/{namespace}/{pod}/{container}: it finds the running container and asks the
// CRI runtime to write its checkpoint archive under <root-dir>/checkpoints, answering with
// the archive's path, or with the runtime's own error where it cannot (containerd 1.6 has no
// checkpointing), as the upstream kubelet does.
package checkpoint

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodelet/nodelet/internal/podspec/podutil"
	"github.com/nodelet/nodelet/internal/runtime/container"
)

// Pods finds desired pods; *pod.Manager implements it.
type Pods interface {
	GetByName(namespace, name string) (*v1.Pod, bool)
}

// Runtime is what a checkpoint needs of the runtime: its running pods (kuberuntime.Manager) and
// the CRI call (cri.Client).
type Runtime interface {
	GetPods(ctx context.Context, all bool) ([]*container.RunningPod, error)
	CheckpointContainer(ctx context.Context, req *runtimeapi.CheckpointContainerRequest) error
}

// Handler serves POST /checkpoint/{namespace}/{pod}/{container}; archives go into dir
// (<root-dir>/checkpoints), created on first use.
func Handler(pods Pods, rt Runtime, dir string) http.Handler {
	return &handler{pods: pods, rt: rt, dir: dir, now: time.Now}
}

type handler struct {
	pods Pods
	rt   Runtime
	dir  string
	now  func() time.Time
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ns, name, ctr := r.PathValue("namespace"), r.PathValue("pod"), r.PathValue("container")
	pod, ok := h.pods.GetByName(ns, name)
	if !ok {
		writeError(w, http.StatusNotFound, "pod does not exist")
		return
	}
	if podutil.FindAnyContainer(pod, ctr) == nil {
		writeError(w, http.StatusNotFound, fmt.Sprintf("container %v does not exist", ctr))
		return
	}
	req := &runtimeapi.CheckpointContainerRequest{}
	// As upstream: the last timeout= wins, and one that does not parse is a 404.
	if values := r.URL.Query()["timeout"]; len(values) > 0 {
		timeout, err := strconv.ParseInt(values[len(values)-1], 10, 64)
		if err != nil {
			writeError(w, http.StatusNotFound, "cannot parse value of timeout parameter")
			return
		}
		req.Timeout = timeout
	}
	if err := h.checkpoint(r.Context(), pod, ctr, req); err != nil {
		writeError(w, http.StatusInternalServerError, fmt.Sprintf("checkpointing of %v/%v/%v failed (%v)", ns, name, ctr, err))
		return
	}
	body, _ := json.Marshal(map[string][]string{"items": {req.Location}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}

// checkpoint finds the pod's running container named ctr and has the runtime write its
// checkpoint to checkpoint-<name>_<namespace>-<container>-<RFC 3339 time>.tar, upstream's name.
func (h *handler) checkpoint(ctx context.Context, pod *v1.Pod, ctr string, req *runtimeapi.CheckpointContainerRequest) error {
	id, err := h.runningContainer(ctx, pod, ctr)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(h.dir, 0o700); err != nil {
		return err
	}
	file := fmt.Sprintf("checkpoint-%s_%s-%s-%s.tar", pod.Name, pod.Namespace, ctr, h.now().Format(time.RFC3339))
	req.ContainerId, req.Location = id, filepath.Join(h.dir, file)
	return h.rt.CheckpointContainer(ctx, req)
}

// runningContainer is the ID of the pod's running container named ctr.
func (h *handler) runningContainer(ctx context.Context, pod *v1.Pod, ctr string) (string, error) {
	running, err := h.rt.GetPods(ctx, false)
	if err != nil {
		return "", err
	}
	for _, rp := range running {
		if rp.UID != pod.UID {
			continue
		}
		for _, c := range rp.Containers {
			if c.Name == ctr && c.State == container.StateRunning {
				return c.ID, nil
			}
		}
	}
	return "", fmt.Errorf("container %v not found", ctr)
}

// writeError answers as upstream's REST framework does: the status and the bare message.
func writeError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(code)
	_, _ = w.Write([]byte(msg))
}
