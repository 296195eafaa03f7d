package kuberuntime

import (
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodelet/nodelet/internal/host/hugepages"
)

// hugepageLimits limits the container to the huge pages its limits ask for, every page size
// of the machine (0 for those it does not ask for), as upstream.
func hugepageLimits(c *v1.Container) []*runtimeapi.HugepageLimit {
	var out []*runtimeapi.HugepageLimit
	for _, l := range hugepages.Limits(c.Resources.Limits) {
		out = append(out, &runtimeapi.HugepageLimit{PageSize: l.PageSize, Limit: l.Bytes})
	}
	return out
}
