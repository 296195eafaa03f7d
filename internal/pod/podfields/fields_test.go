package podfields

import (
	"reflect"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
)

// fieldStep is how the walk reached a listed field: its struct's type, the field, and the
// steps before it (from PodSpec).
type fieldStep struct {
	parent []fieldStep
	typ    reflect.Type
	index  int
}

// walkTypes visits every field reachable from PodSpec through acted-on fields (a refused or
// inert field's own fields are not visited), keyed as the lists key them.
func walkTypes(visit func(key string, at []fieldStep)) {
	done := map[reflect.Type]bool{}
	var walk func(typ reflect.Type, at []fieldStep)
	walk = func(typ reflect.Type, at []fieldStep) {
		if done[typ] {
			return
		}
		done[typ] = true
		for i := range typ.NumField() {
			f := typ.Field(i)
			here := append(slices.Clone(at), fieldStep{typ: typ, index: i})
			if f.Anonymous {
				walk(elemType(f.Type), here)
				continue
			}
			key := keyOf(typ, jsonName(f))
			visit(key, here)
			if _, acted := actedOn[key]; acted {
				if t := elemType(f.Type); isAPIStruct(t) {
					walk(t, here)
				}
			}
		}
	}
	walk(reflect.TypeFor[v1.PodSpec](), nil)
}

func elemType(typ reflect.Type) reflect.Type {
	for typ.Kind() == reflect.Pointer || typ.Kind() == reflect.Slice || typ.Kind() == reflect.Map {
		typ = typ.Elem()
	}
	return typ
}

// Every field of the pod spec, recursively, is acted on, refused or inert: exactly one. A
// field added by a newer k8s.io/api fails here until someone decides which it is.
func TestEveryPodFieldIsActedOnRefusedOrInert(t *testing.T) {
	seen := map[string]bool{}
	walkTypes(func(key string, _ []fieldStep) {
		seen[key] = true
		_, acted := actedOn[key]
		_, isInert := inert[key]
		_, isRefused := refused[key]
		n := 0
		for _, in := range []bool{acted, isInert, isRefused} {
			if in {
				n++
			}
		}
		if n != 1 {
			t.Errorf("field %s: acted on %v, inert %v, refused %v; it must be exactly one", key, acted, isInert, isRefused)
		}
	})
	if len(seen) < 250 {
		t.Errorf("the walk saw only %d fields; it lost its way", len(seen))
	}
	for name, list := range map[string][]string{"actedOn": keys(actedOn), "inert": keys(inert), "refused": keys(refused)} {
		for _, key := range list {
			if !seen[key] {
				t.Errorf("%s entry %s names no pod field the walk reaches (misspelt, removed, or under a refused or inert field)", name, key)
			}
		}
	}
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// Every refused field (bar those with accepted values) is found by Check wherever it sits:
// the test sets just that field in an otherwise empty spec, building the way to it.
func TestCheckFindsEveryRefusedField(t *testing.T) {
	checked := 0
	walkTypes(func(key string, at []fieldStep) {
		r, ok := refused[key]
		if !ok || r.allowed != nil {
			return
		}
		checked++
		spec := &v1.PodSpec{}
		path := setAlong(reflect.ValueOf(spec).Elem(), at, "spec")
		field, why := Check(spec)
		if field != path || why != r.why {
			t.Errorf("%s set at %s: Check says %q (%q)", key, path, field, why)
		}
	})
	if checked < 23 {
		t.Errorf("only %d refused fields were tried", checked)
	}
}

// setAlong makes the fields of at non-empty, one slice element each, and returns the path
// Check names for the last one.
func setAlong(v reflect.Value, at []fieldStep, path string) string {
	for n, step := range at {
		f := step.typ.Field(step.index)
		v = v.Field(step.index)
		if !f.Anonymous {
			path += "." + jsonName(f)
		}
		last := n == len(at)-1
		for {
			switch v.Kind() {
			case reflect.Pointer:
				v.Set(reflect.New(v.Type().Elem()))
				v = v.Elem()
				continue
			case reflect.Slice:
				v.Set(reflect.MakeSlice(v.Type(), 1, 1))
				if last {
					break
				}
				v, path = v.Index(0), path+"[0]"
				continue
			case reflect.Map:
				v.Set(reflect.MakeMap(v.Type()))
			case reflect.String:
				v.SetString("x")
			case reflect.Bool:
				v.SetBool(true)
			case reflect.Int32, reflect.Int64:
				v.SetInt(1)
			}
			break
		}
	}
	return path
}
