package app

import (
	"path/filepath"

	v1 "k8s.io/api/core/v1"

	"github.com/nodelet/nodelet/internal/config"
	"github.com/nodelet/nodelet/internal/runtime/userns"
)

// Where the node's user namespace range is configured, as upstream: the kubelet user's entries.
const (
	subUIDFile = "/etc/subuid"
	subGIDFile = "/etc/subgid"
)

// newUserNamespaces is the allocator of hostUsers: false pods' ID ranges, which re-reads the
// ranges of the pods already on the node.
func newUserNamespaces(cfg *config.Config) (*userns.Manager, error) {
	node, err := userns.NodeRange(subUIDFile, subGIDFile)
	if err != nil {
		return nil, err
	}
	return userns.New(filepath.Join(cfg.RootDir, "pods"), node, int(maxPods(cfg.Kubelet)))
}

// supportsRecursiveReadOnly says whether the runtime reports recursive read-only mounts for
// pod's handler (for its status; the runtime manager decides the mounts themselves).
func (n *agent) supportsRecursiveReadOnly(pod *v1.Pod) bool {
	handler, err := "", error(nil)
	if n.runtimeClasses != nil {
		handler, err = n.runtimeClasses.Handler(pod)
	}
	return err == nil && n.features.RecursiveReadOnlyMounts(handler)
}
