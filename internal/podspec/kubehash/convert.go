package kubehash

import (
	"fmt"
	"reflect"

	v1 "k8s.io/api/core/v1"

	"github.com/nodelet/nodelet/internal/podspec/kubehash/core"
)

// initContainerAnnotations are the pre-1.6 annotations the API server drops when it reads a
// v1 pod, so they are not part of what upstream hashes.
var initContainerAnnotations = map[string]bool{
	"pod.beta.kubernetes.io/init-containers":          true,
	"pod.alpha.kubernetes.io/init-containers":         true,
	"pod.beta.kubernetes.io/init-container-statuses":  true,
	"pod.alpha.kubernetes.io/init-container-statuses": true,
}

// toInternal converts pod into the internal type's mirror as the API server's conversion does.
// Most fields carry over by name; the exceptions are the ones the v1 API keeps for backward
// compatibility (host namespaces at the top of the spec, the deprecated serviceAccount, the
// single pod IP), handled after the field by field copy.
func toInternal(pod *v1.Pod) (*core.Pod, error) {
	out := &core.Pod{}
	if err := convert(reflect.ValueOf(pod).Elem(), reflect.ValueOf(out).Elem(), "pod"); err != nil {
		return nil, err
	}
	out.Annotations = dropInitContainerAnnotations(out.Annotations)
	if g := pod.Spec.TerminationGracePeriodSeconds; g != nil && *g < 0 {
		one := int64(1)
		out.Spec.TerminationGracePeriodSeconds = &one
	}
	in, spec := &pod.Spec, &out.Spec
	if in.ServiceAccountName == "" {
		spec.ServiceAccountName = in.DeprecatedServiceAccount
	}
	if spec.SecurityContext == nil {
		spec.SecurityContext = &core.PodSecurityContext{}
	}
	sc := spec.SecurityContext
	sc.HostNetwork, sc.HostPID, sc.HostIPC = in.HostNetwork, in.HostPID, in.HostIPC
	sc.ShareProcessNamespace, sc.HostUsers = in.ShareProcessNamespace, in.HostUsers
	st := &pod.Status
	if st.PodIP != "" && (len(st.PodIPs) == 0 || st.PodIP != st.PodIPs[0].IP) {
		out.Status.PodIPs = []core.PodIP{{IP: st.PodIP}}
	}
	return out, nil
}

func dropInitContainerAnnotations(a map[string]string) map[string]string {
	found := false
	for k := range a {
		found = found || initContainerAnnotations[k]
	}
	if !found {
		return a
	}
	kept := make(map[string]string, len(a))
	for k, v := range a {
		if !initContainerAnnotations[k] {
			kept[k] = v
		}
	}
	return kept
}

// convert copies in into out field by field by name, keeping nil slices and maps nil and
// non-nil ones non-nil (the printed form tells them apart). A pointer goes to a value as
// the API's conversion does (nil is the zero value). Fields only one side has are left
// out; toInternal handles the ones that move.
func convert(in, out reflect.Value, path string) error {
	if in.Type() == out.Type() {
		out.Set(in)
		return nil
	}
	switch {
	case in.Kind() == reflect.Pointer && out.Kind() == reflect.Pointer:
		if in.IsNil() {
			return nil
		}
		out.Set(reflect.New(out.Type().Elem()))
		return convert(in.Elem(), out.Elem(), path)
	case in.Kind() == reflect.Pointer:
		if in.IsNil() {
			return nil
		}
		return convert(in.Elem(), out, path)
	}
	if in.Kind() != out.Kind() {
		return fmt.Errorf("%s: cannot convert %s to %s", path, in.Type(), out.Type())
	}
	switch in.Kind() {
	case reflect.Struct:
		for i := 0; i < out.NumField(); i++ {
			name := out.Type().Field(i).Name
			f := in.FieldByName(name)
			if !f.IsValid() {
				continue // the pod's host namespaces, which toInternal moves itself
			}
			if err := convert(f, out.Field(i), path+"."+name); err != nil {
				return err
			}
		}
	case reflect.Slice:
		if in.IsNil() {
			return nil
		}
		out.Set(reflect.MakeSlice(out.Type(), in.Len(), in.Len()))
		for i := 0; i < in.Len(); i++ {
			if err := convert(in.Index(i), out.Index(i), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	case reflect.Map:
		if in.IsNil() {
			return nil
		}
		out.Set(reflect.MakeMapWithSize(out.Type(), in.Len()))
		iter := in.MapRange()
		for iter.Next() {
			k, v := reflect.New(out.Type().Key()).Elem(), reflect.New(out.Type().Elem()).Elem()
			if err := convert(iter.Key(), k, path); err != nil {
				return err
			}
			if err := convert(iter.Value(), v, path+"["+fmt.Sprint(iter.Key())+"]"); err != nil {
				return err
			}
			out.SetMapIndex(k, v)
		}
	default:
		out.Set(in.Convert(out.Type()))
	}
	return nil
}
