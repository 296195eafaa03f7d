// Package containeropts turns a pod's container spec into the options the runtime creates it
// with: environment, mounts and /etc/hosts, DNS, security context (seccomp, AppArmor,
// capabilities), devices and the container log links. internal/runtime/kuberuntime calls it while it
// builds a CRI container or sandbox config.
package containeropts

import (
	"context"
	"fmt"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/internal/podspec/downward"
	"github.com/nodelet/nodelet/internal/podspec/objects"
)

// ExpandVars replaces $(NAME) in s with lookup(NAME). "$$" is an escaped "$", references that
// lookup does not know and unterminated "$(" stay as written.
func ExpandVars(s string, lookup func(string) (string, bool)) string {
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

// EnvSource is what env references resolve against.
type EnvSource struct {
	Pod      *v1.Pod
	PodIPs   []string
	NodeName string
	HostIP   string
	Capacity downward.Capacity
	Objects  *objects.Lookups // nil: configMap/secret references fail as in standalone mode
	Services []v1.EnvVar      // service link variables, overridden by the container's own
}

// envContext is one resolution of a container's env.
type envContext struct {
	ctx context.Context
	EnvSource
}

// ContainerEnv resolves the container's env: service variables first, then envFrom sources,
// then env entries, each overriding what came before. Each value may refer to variables defined before it with $(NAME).
func ContainerEnv(ctx context.Context, src EnvSource, c *v1.Container) ([]*runtimeapi.KeyValue, map[string]string, error) {
	ec := envContext{ctx: ctx, EnvSource: src}
	if ec.Objects == nil {
		ec.Objects = objects.NewLookups(nil)
	}
	vars := map[string]string{}
	var order []string
	set := func(k, v string) {
		if _, ok := vars[k]; !ok {
			order = append(order, k)
		}
		vars[k] = v
	}
	for _, e := range ec.Services {
		set(e.Name, e.Value)
	}
	for _, from := range c.EnvFrom {
		if err := ec.envFrom(from, set); err != nil {
			return nil, nil, err
		}
	}
	lookup := func(name string) (string, bool) { v, ok := vars[name]; return v, ok }
	for _, e := range c.Env {
		if e.ValueFrom == nil {
			set(e.Name, ExpandVars(e.Value, lookup))
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

// envFrom sets every key of a ConfigMap or Secret, with the source's prefix. Keys that do not
// make valid variable names are skipped, as are missing optional objects.
func (ec envContext) envFrom(from v1.EnvFromSource, set func(k, v string)) error {
	var data map[string][]byte
	var kind, name string
	switch {
	case from.ConfigMapRef != nil:
		kind, name = "configMap", from.ConfigMapRef.Name
		cm, err := ec.Objects.ConfigMap(ec.ctx, ec.Pod.Namespace, name, isTrue(from.ConfigMapRef.Optional))
		if err != nil || cm == nil {
			return err
		}
		data = make(map[string][]byte, len(cm.Data))
		for k, v := range cm.Data {
			data[k] = []byte(v)
		}
	case from.SecretRef != nil:
		kind, name = "secret", from.SecretRef.Name
		s, err := ec.Objects.Secret(ec.ctx, ec.Pod.Namespace, name, isTrue(from.SecretRef.Optional))
		if err != nil || s == nil {
			return err
		}
		data = s.Data
	default:
		return nil
	}
	keys := make([]string, 0, len(data))
	for k := range data {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var invalid []string
	for _, k := range keys {
		if errs := validation.IsEnvVarName(from.Prefix + k); len(errs) > 0 {
			invalid = append(invalid, k)
			continue
		}
		set(from.Prefix+k, string(data[k]))
	}
	if len(invalid) > 0 {
		klog.InfoS("Skipped invalid environment variable names from envFrom", "pod", klog.KObj(ec.Pod),
			kind, name, "keys", invalid)
	}
	return nil
}

// valueFrom resolves one env source; ok is false for a missing optional source.
func (ec envContext) valueFrom(src *v1.EnvVarSource, c *v1.Container) (string, bool, error) {
	switch {
	case src.FieldRef != nil:
		v, err := ec.fields().FieldValue(src.FieldRef.FieldPath)
		return v, err == nil, err
	case src.ResourceFieldRef != nil:
		v, err := ec.fields().ResourceValue(src.ResourceFieldRef, c)
		return v, err == nil, err
	case src.ConfigMapKeyRef != nil:
		ref := src.ConfigMapKeyRef
		cm, err := ec.Objects.ConfigMap(ec.ctx, ec.Pod.Namespace, ref.Name, isTrue(ref.Optional))
		if err != nil || cm == nil {
			return "", false, err
		}
		if v, ok := cm.Data[ref.Key]; ok {
			return v, true, nil
		}
		if v, ok := cm.BinaryData[ref.Key]; ok {
			return string(v), true, nil
		}
		return "", false, missingKey(isTrue(ref.Optional), ref.Key, "ConfigMap", ec.Pod.Namespace, ref.Name)
	case src.SecretKeyRef != nil:
		ref := src.SecretKeyRef
		s, err := ec.Objects.Secret(ec.ctx, ec.Pod.Namespace, ref.Name, isTrue(ref.Optional))
		if err != nil || s == nil {
			return "", false, err
		}
		if v, ok := s.Data[ref.Key]; ok {
			return string(v), true, nil
		}
		return "", false, missingKey(isTrue(ref.Optional), ref.Key, "Secret", ec.Pod.Namespace, ref.Name)
	}
	return "", false, fmt.Errorf("env source without fieldRef, resourceFieldRef, configMapKeyRef or secretKeyRef")
}

func missingKey(optional bool, key, kind, ns, name string) error {
	if optional {
		return nil
	}
	return fmt.Errorf("couldn't find key %s in %s %s/%s", key, kind, ns, name)
}

// fields is the downward API view of ec.
func (ec envContext) fields() downward.Fields {
	return downward.Fields{Pod: ec.Pod, PodIPs: ec.PodIPs, NodeName: ec.NodeName, HostIP: ec.HostIP, Capacity: ec.Capacity}
}

func isTrue(b *bool) bool { return b != nil && *b }

// ExpandCommand expands $(VAR) references in command and args from the container's env.
func ExpandCommand(c *v1.Container, vars map[string]string) (cmd, args []string) {
	lookup := func(name string) (string, bool) { v, ok := vars[name]; return v, ok }
	for _, s := range c.Command {
		cmd = append(cmd, ExpandVars(s, lookup))
	}
	for _, s := range c.Args {
		args = append(args, ExpandVars(s, lookup))
	}
	return cmd, args
}
