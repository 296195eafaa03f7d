// Package podfields accounts for every field of the pod spec: nodelet acts on it, refuses a
// pod that sets it (Check, called at admission), or it is inert on a node (the scheduler or
// the API server acts on it). The lists are data (fields.go); a test walks the v1 types by
// reflection so that a field added by a newer k8s.io/api is decided on before it is accepted.
package podfields

import (
	"fmt"
	"reflect"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// Reason is the reason of a pod refused for a field nodelet cannot honour.
const Reason = "PodFieldNotSupported"

// refusal says why nodelet refuses a pod that sets a field, and which values it still takes.
type refusal struct {
	why string
	// allowed, when set, accepts the values nodelet handles (or that do nothing on Linux);
	// without it only the unset field is accepted.
	allowed func(reflect.Value) bool
}

// Check returns the first field of spec that nodelet refuses, as its path from the pod
// ("spec.volumes[1].image"), and why; "" when there is none.
func Check(spec *v1.PodSpec) (field, why string) {
	return checkStruct(reflect.ValueOf(spec).Elem(), "spec")
}

func checkStruct(v reflect.Value, path string) (string, string) {
	typ := v.Type()
	for i := range typ.NumField() {
		f, fv := typ.Field(i), v.Field(i)
		if f.Anonymous {
			if field, why := checkValue(fv, path); field != "" {
				return field, why
			}
			continue
		}
		name := jsonName(f)
		key := keyOf(typ, name)
		if r, ok := refused[key]; ok {
			if !fv.IsZero() && (r.allowed == nil || !r.allowed(fv)) {
				return path + "." + name, r.why
			}
			continue
		}
		if _, ok := actedOn[key]; ok {
			if field, why := checkValue(fv, path+"."+name); field != "" {
				return field, why
			}
		}
	}
	return "", ""
}

// checkValue looks inside the v1 structs a field holds, through pointers and slices.
func checkValue(v reflect.Value, path string) (string, string) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			return checkValue(v.Elem(), path)
		}
	case reflect.Slice:
		for i := range v.Len() {
			if field, why := checkValue(v.Index(i), fmt.Sprintf("%s[%d]", path, i)); field != "" {
				return field, why
			}
		}
	case reflect.Struct:
		if isAPIStruct(v.Type()) {
			return checkStruct(v, path)
		}
	}
	return "", ""
}

// isAPIStruct says whether typ is a struct of k8s.io/api/core/v1, whose fields are listed;
// others (quantities, label selectors) are one value each.
func isAPIStruct(typ reflect.Type) bool {
	return typ.Kind() == reflect.Struct && typ.PkgPath() == reflect.TypeFor[v1.PodSpec]().PkgPath()
}

// keyOf names a field in the lists: its struct's type and its JSON name. An ephemeral
// container's fields are a container's.
func keyOf(typ reflect.Type, name string) string {
	t := typ.Name()
	if t == "EphemeralContainerCommon" {
		t = "Container"
	}
	return t + "." + name
}

func jsonName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	return name
}
