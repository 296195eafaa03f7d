package app

import (
	"go/ast"
	"strconv"
	"strings"
	"testing"

	"github.com/nodelet/nodelet/internal/testutil"
)

// Every component is given what it needs when it is made: where two need each other, a small
// piece both read or write (the probe results, the node view, the workers' states, the PLEG's
// listing, the sync queue) is made before both. So app holds no atomic pointer to a component
// made later and calls no setter that hands one over after construction.
func TestNoLateLinks(t *testing.T) {
	lateCalls := map[string]bool{"TrackPods": true, "RunningAtStart": true, "AddHintProvider": true}
	for file, f := range testutil.Sources(t, 0) {
		for _, spec := range f.Imports {
			if path, _ := strconv.Unquote(spec.Path.Value); path == "sync/atomic" {
				t.Errorf("%s imports sync/atomic", file)
			}
		}
		ast.Inspect(f, func(node ast.Node) bool {
			switch x := node.(type) {
			case *ast.FuncDecl:
				if strings.HasPrefix(x.Name.Name, "wire") {
					t.Errorf("%s: func %s links components after construction", file, x.Name.Name)
				}
			case *ast.SelectorExpr:
				if lateCalls[x.Sel.Name] || strings.HasPrefix(x.Sel.Name, "wire") {
					t.Errorf("%s: %s is called after construction", file, x.Sel.Name)
				}
			}
			return true
		})
	}
}
