// Package downward resolves the downward API: the pod fields and container resources that
// environment variables and downwardAPI volume files expose.
package downward

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/nodelet/nodelet/internal/podspec/podutil"
)

// Capacity is the machine's size, which an unset limit reads as.
type Capacity struct {
	MilliCPU    int64
	MemoryBytes int64
}

// Quantity is the capacity of resource name, false for resources it does not know.
func (n Capacity) Quantity(name v1.ResourceName) (resource.Quantity, bool) {
	switch name {
	case v1.ResourceCPU:
		return *resource.NewMilliQuantity(n.MilliCPU, resource.DecimalSI), true
	case v1.ResourceMemory:
		return *resource.NewQuantity(n.MemoryBytes, resource.BinarySI), true
	}
	return resource.Quantity{}, false
}

// Fields is what downward API references resolve against.
type Fields struct {
	Pod      *v1.Pod
	PodIPs   []string // empty before the sandbox exists (volumes)
	NodeName string   // for a pod without spec.nodeName (static pods)
	HostIP   string
	Capacity Capacity
}

// FieldValue resolves a fieldRef path.
func (f Fields) FieldValue(path string) (string, error) {
	pod := f.Pod
	if key, ok := subscript(path, "metadata.labels"); ok {
		return pod.Labels[key], nil
	}
	if key, ok := subscript(path, "metadata.annotations"); ok {
		return pod.Annotations[key], nil
	}
	switch path {
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.uid":
		return string(pod.UID), nil
	case "metadata.labels":
		return formatMap(pod.Labels), nil
	case "metadata.annotations":
		return formatMap(pod.Annotations), nil
	case "spec.nodeName":
		if pod.Spec.NodeName != "" {
			return pod.Spec.NodeName, nil
		}
		return f.NodeName, nil
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, nil
	case "status.podIP":
		if len(f.PodIPs) > 0 {
			return f.PodIPs[0], nil
		}
		return "", nil
	case "status.podIPs":
		return strings.Join(f.PodIPs, ","), nil
	case "status.hostIP", "status.hostIPs":
		return f.HostIP, nil
	}
	return "", fmt.Errorf("unsupported fieldRef %q", path)
}

// subscript parses `prefix['key']`.
func subscript(path, prefix string) (string, bool) {
	rest, ok := strings.CutPrefix(path, prefix+"['")
	if !ok || !strings.HasSuffix(rest, "']") {
		return "", false
	}
	return strings.TrimSuffix(rest, "']"), true
}

// formatMap renders labels/annotations as the downward API does: sorted key="value" lines.
func formatMap(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	lines := make([]string, len(keys))
	for i, k := range keys {
		lines[i] = fmt.Sprintf("%s=%q", k, m[k])
	}
	return strings.Join(lines, "\n")
}

// ResourceValue resolves limits/requests of cpu, memory, ephemeral-storage or hugepages-<size> of c (or of the
// container ref names), divided by the divisor and rounded up. An unset limit reads as the
// capacity, as upstream does.
func (f Fields) ResourceValue(ref *v1.ResourceFieldSelector, c *v1.Container) (string, error) {
	target := c
	if ref.ContainerName != "" && (c == nil || ref.ContainerName != c.Name) {
		target = podutil.FindContainer(f.Pod, ref.ContainerName)
		if target == nil {
			return "", fmt.Errorf("container %q not found", ref.ContainerName)
		}
	}
	kind, name, ok := strings.Cut(ref.Resource, ".")
	if !ok || (kind != "limits" && kind != "requests") {
		return "", fmt.Errorf("unsupported resource %q", ref.Resource)
	}
	resName := v1.ResourceName(name)
	var q resource.Quantity
	var set bool
	if kind == "limits" {
		q, set = target.Resources.Limits[resName]
	} else {
		q, set = target.Resources.Requests[resName]
	}
	hugePages := strings.HasPrefix(name, v1.ResourceHugePagesPrefix)
	if !set && kind == "limits" && !hugePages {
		// Huge pages are not defaulted: an unset limit reads 0, as upstream.
		q, set = f.Capacity.Quantity(resName)
	}
	if !set {
		q = resource.Quantity{}
	}
	divisor := ref.Divisor
	if divisor.IsZero() {
		divisor = resource.MustParse("1")
	}
	switch resName {
	case v1.ResourceCPU:
		return strconv.FormatInt(int64(math.Ceil(float64(q.MilliValue())/float64(divisor.MilliValue()))), 10), nil
	case v1.ResourceMemory, v1.ResourceEphemeralStorage:
		return strconv.FormatInt(int64(math.Ceil(float64(q.Value())/float64(divisor.Value()))), 10), nil
	}
	if hugePages {
		return strconv.FormatInt(int64(math.Ceil(float64(q.Value())/float64(divisor.Value()))), 10), nil
	}
	return "", fmt.Errorf("unsupported resource %q", ref.Resource)
}
