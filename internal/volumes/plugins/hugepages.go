package plugins

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/nodelet/nodelet/internal/volumes/mount"
)

// isHugePagesMedium says whether an emptyDir lives on huge pages: medium HugePages, or
// HugePages-<size> naming the page size.
func isHugePagesMedium(m v1.StorageMedium) bool {
	return m == v1.StorageMediumHugePages || strings.HasPrefix(string(m), string(v1.StorageMediumHugePagesPrefix))
}

// hugePageSize is the page size, in bytes, of an emptyDir of a huge pages medium: the size the
// medium names, which a container of the pod must request; or, for plain HugePages, the one
// size the pod's containers request. Errors are upstream's.
func hugePageSize(pod *v1.Pod, medium v1.StorageMedium) (int64, error) {
	var want *resource.Quantity
	if medium != v1.StorageMediumHugePages {
		q, err := resource.ParseQuantity(strings.TrimPrefix(string(medium), string(v1.StorageMediumHugePagesPrefix)))
		if err != nil {
			return 0, fmt.Errorf("size not specified or invalid: %s", medium)
		}
		want = &q
	}
	var found *resource.Quantity
	for _, list := range [][]v1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		for _, c := range list {
			for name := range c.Resources.Requests {
				size, ok := strings.CutPrefix(string(name), v1.ResourceHugePagesPrefix)
				if !ok {
					continue
				}
				q, err := resource.ParseQuantity(size)
				if err != nil {
					return 0, fmt.Errorf("size not specified or invalid: %s", name)
				}
				switch {
				case want != nil && q.Cmp(*want) == 0:
					found = &q
				case want == nil && found != nil && found.Cmp(q) != 0:
					return 0, fmt.Errorf("medium: %s can't be used if container requests multiple huge page sizes", medium)
				case want == nil:
					found = &q
				}
			}
		}
	}
	if found == nil {
		return 0, fmt.Errorf("medium %s: hugePages storage requested, but there is no resource request for huge pages", medium)
	}
	return found.Value(), nil
}

// ensureHugetlbfs mounts a hugetlbfs of pageSize pages on dir unless one is there already.
func ensureHugetlbfs(m mount.Mounter, pod *v1.Pod, dir string, pageSize int64) error {
	return ensureMount(m, pod, dir, "hugetlbfs", func() error { return m.MountHugetlbfs(dir, pageSize) })
}
