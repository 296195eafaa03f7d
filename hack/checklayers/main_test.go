package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fixture writes a module with three groups, lib ← pod ← app, whose files are given by path.
func fixture(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	files["go.mod"] = "module example.com/m\n\ngo 1.22\n"
	files["layers.txt"] = "lib\npod lib\napp *\ntestutil *\n"
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func pkg(name string, imports ...string) string {
	s := "package " + name + "\n"
	for _, imp := range imports {
		s += "import _ \"example.com/m/internal/" + imp + "\"\n"
	}
	return s
}

func TestImportsDownTheLayersPass(t *testing.T) {
	dir := fixture(t, map[string]string{
		"internal/lib/a/a.go":       pkg("a"),
		"internal/lib/b/b.go":       pkg("b", "lib/a"),
		"internal/pod/p/p.go":       pkg("p", "lib/b"),
		"internal/pod/p/p_test.go":  pkg("p", "testutil", "app"), // tests may import across groups
		"internal/app/app.go":       pkg("app", "pod/p", "lib/a"),
		"internal/testutil/util.go": pkg("testutil", "pod/p"),
	})
	problems, err := run(dir, "layers.txt")
	if err != nil {
		t.Fatal(err)
	}
	if len(problems) > 0 {
		t.Errorf("problems = %q, want none", problems)
	}
}

func TestWrongWayImportFails(t *testing.T) {
	dir := fixture(t, map[string]string{
		"internal/lib/a/a.go": pkg("a", "pod/p"), // lib reaching up into pod
		"internal/pod/p/p.go": pkg("p"),
	})
	problems, err := run(dir, "layers.txt")
	if err != nil {
		t.Fatal(err)
	}
	if len(problems) != 1 || !strings.Contains(problems[0], "example.com/m/internal/lib/a imports example.com/m/internal/pod/p: group lib may not import group pod") {
		t.Errorf("problems = %q, want lib/a → pod/p refused", problems)
	}
}

func TestTestOnlyPackageAndUngroupedPackageFail(t *testing.T) {
	dir := fixture(t, map[string]string{
		"internal/pod/p/p.go":                  pkg("p", "lib/fakelib"),
		"internal/lib/fakelib/fake.go":         pkg("fakelib"),
		"internal/stray/s.go":                  pkg("s"),
		"internal/testutil/util.go":            pkg("testutil", "lib/fakelib"),
		"internal/lib/fakelib/fakelib_test.go": pkg("fakelib"),
	})
	problems, err := run(dir, "layers.txt")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"example.com/m/internal/pod/p imports example.com/m/internal/lib/fakelib: a test-only package",
		"example.com/m/internal/stray: in no group (add internal/stray to the rules, or move the package into a group)",
	}
	if strings.Join(problems, "\n") != strings.Join(want, "\n") {
		t.Errorf("problems = %q, want %q", problems, want)
	}
}

func TestRulesMayOnlyPointDown(t *testing.T) {
	dir := fixture(t, map[string]string{"internal/lib/a/a.go": pkg("a")})
	if err := os.WriteFile(filepath.Join(dir, "layers.txt"), []byte("lib pod\npod lib\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := run(dir, "layers.txt"); err == nil || !strings.Contains(err.Error(), "lib may import pod, which is not listed above it") {
		t.Errorf("err = %v, want the upward rule refused", err)
	}
}
