package podsync

import (
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/types"
)

// Releaser is an owner of per-pod state: a pod cgroup, CPUs, memory, NUMA placements,
// devices, an ID range, checkpoints, statuses. It is told once a pod is removed for good.
// ReleasePod must be idempotent: a failed release is retried with every releaser again.
type Releaser interface {
	// Name says whose state it is, in errors and logs.
	Name() string
	// ReleasePod drops or frees whatever the owner keeps for the pod; a pod it keeps nothing
	// for is not an error.
	ReleasePod(uid types.UID) error
}

// Release is the order in which a removed pod's state goes.
type Release struct {
	// Host are what the pod still holds of the host (its cgroup, then its directory with its
	// mounts), in order. The first failure stops the release: until the pod's processes and
	// mounts are gone its IDs, CPUs, memory and devices must not be handed to another pod.
	Host []Releaser
	// Books are the owners' records of the pod, released in order once Host is; each is
	// told even when one before it failed, and their errors are joined.
	Books []Releaser
}

// run releases uid in r's order; the error names every releaser that failed.
func (r Release) run(uid types.UID) error {
	for _, h := range r.Host {
		if err := h.ReleasePod(uid); err != nil {
			return fmt.Errorf("releasing the pod's %s: %w", h.Name(), err)
		}
	}
	var errs []error
	for _, b := range r.Books {
		if err := b.ReleasePod(uid); err != nil {
			errs = append(errs, fmt.Errorf("releasing the pod's %s: %w", b.Name(), err))
		}
	}
	return errors.Join(errs...)
}

// ReleaseFunc makes a Releaser of a function, for state with no owner type of its own.
func ReleaseFunc(name string, release func(uid types.UID) error) Releaser {
	return releaseFunc{name: name, release: release}
}

type releaseFunc struct {
	name    string
	release func(uid types.UID) error
}

func (f releaseFunc) Name() string                   { return f.name }
func (f releaseFunc) ReleasePod(uid types.UID) error { return f.release(uid) }
