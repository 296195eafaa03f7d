package testutil

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// Sources parses the package's own source files (the test's directory, test files left out)
// with mode, by file name: for tests that check what a package imports or calls.
func Sources(t *testing.T, mode parser.Mode) map[string]*ast.File {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*ast.File{}
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), file, nil, mode)
		if err != nil {
			t.Fatal(err)
		}
		out[file] = f
	}
	return out
}
