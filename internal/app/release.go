package app

import (
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/nodelet/nodelet/internal/pod/podsync"
)

// sweepPeriod spaces the searches for per-pod state of pods gone while nodelet was down or
// between two steps of their release (those removed while it runs are released at once).
const sweepPeriod = 10 * time.Second

// release is the one path a removed pod's state takes, in a fixed order: what it holds of the
// host first (its cgroup, then its directory), then the owners' records of it, the statuses
// first and the resources other pods may be given after.
func (n *agent) release() podsync.Release {
	r := podsync.Release{Host: []podsync.Releaser{n.cm, n.volumes}}
	r.Books = append(r.Books, n.statuses, n.images, n.resizer)
	if n.cluster != nil {
		r.Books = append(r.Books, n.cluster.apiStatus)
	}
	r.Books = append(r.Books, n.idRanges)
	if n.memory != nil {
		r.Books = append(r.Books, n.memory)
	}
	r.Books = append(r.Books, n.topology)
	if n.cpus != nil {
		r.Books = append(r.Books, n.cpus)
	}
	if n.devices != nil {
		r.Books = append(r.Books, n.devices)
	}
	if n.dra != nil {
		r.Books = append(r.Books, n.dra)
	}
	return r
}

// sweep is the one search for the state of pods that are gone, once every pod source has
// been handled: pod cgroups and allocation checkpoints of pods no source and no runtime has,
// the NUMA memory of pods no longer active. The device manager frees the devices of pods no
// longer active when it admits one (as upstream), so it is not swept.
func (n *agent) sweep() *podsync.Sweep {
	owners := []podsync.Retained{{Retainer: n.cm}, {Retainer: n.resizer}}
	if n.memory != nil {
		owners = append(owners, podsync.Retained{Retainer: n.memory, ActiveOnly: true})
	}
	return &podsync.Sweep{
		Owners: owners, Ready: n.synced.Ready, Period: sweepPeriod,
		Active:  n.activePods,
		Known:   func(uid types.UID) bool { _, ok := n.pods.Get(uid); return ok },
		Runtime: n.listing.RunningPods,
	}
}
