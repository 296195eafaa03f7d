package config

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The configuration is read by every component, so it depends on none of them: what it checks
// of a component (policy names, option parsing) lives in a small shared package instead.
func TestConfigImportsNoComponent(t *testing.T) {
	allowed := map[string]bool{"github.com/nodelet/nodelet/internal/cmpolicy": true}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, spec := range f.Imports {
			path, _ := strconv.Unquote(spec.Path.Value)
			if strings.HasPrefix(path, "github.com/nodelet/nodelet/") && !allowed[path] {
				t.Errorf("%s imports %s", file, path)
			}
		}
	}
}
