package config

import (
	"go/parser"
	"strconv"
	"strings"
	"testing"

	"github.com/nodelet/nodelet/internal/testutil"
)

// The configuration is read by every component, so it depends on none of them: what it checks
// of a component (policy names, option parsing) lives in a small shared package instead.
func TestConfigImportsNoComponent(t *testing.T) {
	allowed := map[string]bool{"github.com/nodelet/nodelet/internal/cm/cmpolicy": true}
	for file, f := range testutil.Sources(t, parser.ImportsOnly) {
		for _, spec := range f.Imports {
			path, _ := strconv.Unquote(spec.Path.Value)
			if strings.HasPrefix(path, "github.com/nodelet/nodelet/") && !allowed[path] {
				t.Errorf("%s imports %s", file, path)
			}
		}
	}
}
