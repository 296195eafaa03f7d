package config

import (
	"reflect"
	"testing"
)

// TestEveryConfigFieldIsActedOnOrRefused walks KubeletConfiguration and the structs nested in
// it (authentication.webhook, logging.options.text...): each field whose value is one setting is
// in exactly one list, under its dotted path; a struct is listed as a whole only when it is
// refused or inert whole (tracing), else its fields are. A list entry naming no field fails too.
func TestEveryConfigFieldIsActedOnOrRefused(t *testing.T) {
	refused := map[string]bool{}
	for _, u := range unsupportedFields {
		refused[u.field] = true
	}
	seen := map[string]bool{}
	walkSettings(func(path string, typ reflect.Type) bool {
		seen[path] = true
		_, acted := actedOn[path]
		_, inert := inertUpstream[path]
		n := 0
		for _, in := range []bool{acted, inert, refused[path]} {
			if in {
				n++
			}
		}
		nested := isNestedSettings(typ)
		switch {
		case nested && acted:
			t.Errorf("field %s: a struct of settings; list its fields instead of the whole", path)
		case nested && n == 0:
			return true
		case n != 1:
			t.Errorf("field %s: acted on %v, inert upstream %v, refused %v; it must be exactly one", path, acted, inert, refused[path])
		}
		return false
	})
	for _, list := range []map[string]string{actedOn, inertUpstream} {
		for path := range list {
			if !seen[path] {
				t.Errorf("list entry %s names no KubeletConfiguration field", path)
			}
		}
	}
	for path := range refused {
		if !seen[path] {
			t.Errorf("unsupportedFields entry %s names no KubeletConfiguration field", path)
		}
	}
}
