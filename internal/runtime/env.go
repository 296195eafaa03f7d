package runtime

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// expandVars replaces $(NAME) in s with lookup(NAME). "$$" is an escaped "$", references that
// lookup does not know and unterminated "$(" stay as written.
func expandVars(s string, lookup func(string) (string, bool)) string {
	if !strings.Contains(s, "$") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(s[i+2:], ')')
			if end < 0 {
				b.WriteString(s[i:])
				return b.String()
			}
			name := s[i+2 : i+2+end]
			if v, ok := lookup(name); ok && name != "" {
				b.WriteString(v)
			} else {
				b.WriteString(s[i : i+3+end])
			}
			i += 2 + end
		default:
			b.WriteByte('$')
		}
	}
	return b.String()
}

// envContext is what env references resolve against.
type envContext struct {
	pod      *v1.Pod
	podIPs   []string
	nodeName string
	hostIP   string
	capacity nodeCapacity
}

// containerEnv resolves the container's env in order: each value may refer to variables
// defined before it with $(NAME).
func containerEnv(ec envContext, c *v1.Container) ([]*runtimeapi.KeyValue, map[string]string, error) {
	vars := map[string]string{}
	var order []string
	set := func(k, v string) {
		if _, ok := vars[k]; !ok {
			order = append(order, k)
		}
		vars[k] = v
	}
	for _, from := range c.EnvFrom {
		optional := (from.ConfigMapRef != nil && isTrue(from.ConfigMapRef.Optional)) ||
			(from.SecretRef != nil && isTrue(from.SecretRef.Optional))
		if !optional {
			return nil, nil, fmt.Errorf("envFrom configMap/secret is not supported by nodelet")
		}
	}
	lookup := func(name string) (string, bool) { v, ok := vars[name]; return v, ok }
	for _, e := range c.Env {
		if e.ValueFrom == nil {
			set(e.Name, expandVars(e.Value, lookup))
			continue
		}
		v, ok, err := ec.valueFrom(e.ValueFrom, c)
		if err != nil {
			return nil, nil, fmt.Errorf("env %q: %w", e.Name, err)
		}
		if ok {
			set(e.Name, v)
		}
	}
	out := make([]*runtimeapi.KeyValue, 0, len(order))
	for _, k := range order {
		out = append(out, &runtimeapi.KeyValue{Key: k, Value: vars[k]})
	}
	return out, vars, nil
}

// valueFrom resolves a fieldRef or resourceFieldRef; ok is false for a missing optional source.
func (ec envContext) valueFrom(src *v1.EnvVarSource, c *v1.Container) (string, bool, error) {
	switch {
	case src.FieldRef != nil:
		v, err := ec.fieldValue(src.FieldRef.FieldPath)
		return v, err == nil, err
	case src.ResourceFieldRef != nil:
		v, err := ec.resourceValue(src.ResourceFieldRef, c)
		return v, err == nil, err
	case src.ConfigMapKeyRef != nil && isTrue(src.ConfigMapKeyRef.Optional),
		src.SecretKeyRef != nil && isTrue(src.SecretKeyRef.Optional):
		return "", false, nil
	}
	return "", false, fmt.Errorf("configMap/secret references are not supported by nodelet")
}

// fieldValue resolves a downward-API field path.
func (ec envContext) fieldValue(path string) (string, error) {
	pod := ec.pod
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
		return ec.nodeName, nil
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, nil
	case "status.podIP":
		if len(ec.podIPs) > 0 {
			return ec.podIPs[0], nil
		}
		return "", nil
	case "status.podIPs":
		return strings.Join(ec.podIPs, ","), nil
	case "status.hostIP", "status.hostIPs":
		return ec.hostIP, nil
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

// resourceValue resolves limits/requests of cpu, memory or ephemeral-storage, divided by the
// divisor and rounded up. An unset limit reads as node capacity, as upstream does.
func (ec envContext) resourceValue(ref *v1.ResourceFieldSelector, c *v1.Container) (string, error) {
	target := c
	if ref.ContainerName != "" && ref.ContainerName != c.Name {
		target = findContainer(ec.pod, ref.ContainerName)
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
	if !set && kind == "limits" {
		q, set = ec.capacity.quantity(resName)
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
	return "", fmt.Errorf("unsupported resource %q", ref.Resource)
}

func findContainer(pod *v1.Pod, name string) *v1.Container {
	for _, list := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			if list[i].Name == name {
				return &list[i]
			}
		}
	}
	return nil
}

func isTrue(b *bool) bool { return b != nil && *b }

// expandCommand expands $(VAR) references in command and args from the container's env.
func expandCommand(c *v1.Container, vars map[string]string) (cmd, args []string) {
	lookup := func(name string) (string, bool) { v, ok := vars[name]; return v, ok }
	for _, s := range c.Command {
		cmd = append(cmd, expandVars(s, lookup))
	}
	for _, s := range c.Args {
		args = append(args, expandVars(s, lookup))
	}
	return cmd, args
}
