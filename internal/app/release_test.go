package app

import (
	"slices"
	"testing"

	"github.com/nodelet/nodelet/internal/cm"
	"github.com/nodelet/nodelet/internal/cm/cpumanager"
	"github.com/nodelet/nodelet/internal/cm/deviceplugin"
	"github.com/nodelet/nodelet/internal/cm/memorymanager"
	"github.com/nodelet/nodelet/internal/cm/topologymanager"
	"github.com/nodelet/nodelet/internal/pod/podsync"
	"github.com/nodelet/nodelet/internal/pod/resize"
	"github.com/nodelet/nodelet/internal/pod/status"
	"github.com/nodelet/nodelet/internal/runtime/images"
	"github.com/nodelet/nodelet/internal/runtime/userns"
	"github.com/nodelet/nodelet/internal/volumes"
)

func names(rs []podsync.Releaser) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Name())
	}
	return out
}

// A removed pod's state goes in one fixed order: what it holds of the host first, then the
// records, the statuses first and what other pods may be given (IDs, memory, CPUs, devices)
// last. The owners a node does not run are left out.
func TestReleaseOrder(t *testing.T) {
	n := &agent{
		cm: &cm.ContainerManager{}, volumes: &volumes.Manager{}, statuses: &status.Manager{}, images: &images.Manager{},
		resizer: &resize.Resizer{}, idRanges: &userns.Manager{}, topology: &topologymanager.Manager{},
	}
	r := n.release()
	if got := names(r.Host); !slices.Equal(got, []string{"cgroup", "pod directory"}) {
		t.Errorf("host %v", got)
	}
	want := []string{"status", "image pull state", "resource allocation", "user namespace", "NUMA placements"}
	if got := names(r.Books); !slices.Equal(got, want) {
		t.Errorf("standalone, no resource managers: books %v, want %v", got, want)
	}
	n.cluster = &cluster{apiStatus: &status.APISyncer{}}
	n.memory, n.cpus, n.devices = &memorymanager.Manager{}, &cpumanager.Manager{}, &deviceplugin.Manager{}
	want = []string{"status", "image pull state", "resource allocation", "API status", "user namespace", "memory", "NUMA placements", "CPUs", "devices"}
	if got := names(n.release().Books); !slices.Equal(got, want) {
		t.Errorf("cluster with every manager: books %v, want %v", got, want)
	}
}
