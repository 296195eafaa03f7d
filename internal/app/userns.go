package app

import (
	"path/filepath"

	"k8s.io/apimachinery/pkg/types"

	"github.com/nodelet/nodelet/internal/config"
	"github.com/nodelet/nodelet/internal/userns"
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

// releaseUserNamespace chains the release of a removed pod's ID range onto forget.
func releaseUserNamespace(ranges *userns.Manager, forget func(types.UID)) func(types.UID) {
	return func(uid types.UID) {
		if forget != nil {
			forget(uid)
		}
		ranges.Release(uid)
	}
}
