// Command regroup performs the one-time regrouping of internal/ (issue 44): it moves every
// package directory to the place hack/regroup/moves.txt gives it (git mv), renames the packages
// whose name changes (runtime → kuberuntime, lifecycle → goroutines, runpod joins podrun),
// rewrites the import paths and qualifiers of every Go file of the module and the paths in the
// Makefile, scripts and pages, installs the layering rules (hack/layers.txt, checked by
// hack/checklayers in `make unit`) and the architecture page written for the new tree, and
// removes itself. It changes no behaviour. Run it from the repository root on a clean tree:
//
//	go run ./hack/regroup
//
// It refuses to run twice (the old directories are gone) and leaves the result staged, after
// gofmt, go build ./..., go vet ./... and the layering check.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

const dir = "hack/regroup"

func main() {
	verify := flag.Bool("verify", true, "run go build, go vet and the layering check afterwards")
	flag.Parse()
	start := time.Now()
	if err := regroup(); err != nil {
		fmt.Fprintln(os.Stderr, "regroup:", err)
		os.Exit(1)
	}
	fmt.Printf("regroup: moved and rewritten in %s\n", time.Since(start).Round(time.Millisecond))
	if *verify {
		for _, c := range [][]string{{"go", "build", "./..."}, {"go", "vet", "./..."}, {"go", "run", "./hack/checklayers"}} {
			if err := run(c...); err != nil {
				fmt.Fprintln(os.Stderr, "regroup: the moved tree fails:", err)
				os.Exit(1)
			}
		}
	}
	fmt.Printf("regroup: done in %s; the move is staged: review and commit it\n", time.Since(start).Round(time.Millisecond))
}

func regroup() error {
	if err := checkStart(); err != nil {
		return err
	}
	pl, err := readPlan(filepath.Join(dir, "moves.txt"))
	if err != nil {
		return err
	}
	rw := pl.pathRewriter()
	qw, err := pl.qualRewriter()
	if err != nil {
		return err
	}
	goFiles, textFiles, err := files()
	if err != nil {
		return err
	}
	for _, f := range goFiles {
		if err := rewriteFile(f, func(src []byte) ([]byte, error) {
			out, err := pl.rewriteGo(f, src)
			return qw.comments(rw.rewrite(out)), err
		}); err != nil {
			return err
		}
	}
	for _, f := range textFiles {
		if err := rewriteFile(f, func(src []byte) ([]byte, error) { return qw.text(rw.rewrite(src)), nil }); err != nil {
			return err
		}
	}
	for _, m := range pl.moves {
		if err := move(filepath.Join("internal", m[0]), filepath.Join("internal", m[1])); err != nil {
			return err
		}
	}
	if err := install(); err != nil {
		return err
	}
	if err := run("gofmt", "-w", "internal", "cmd", "test", "hack", "images"); err != nil {
		return err
	}
	return run("git", "add", "-A")
}

// checkStart refuses a tree that is not the repository root, not clean, or already regrouped.
func checkStart() error {
	mod, err := os.ReadFile("go.mod")
	if err != nil || !bytes.HasPrefix(mod, []byte("module "+module+"\n")) {
		return errors.New("run it from the root of the nodelet repository")
	}
	if _, err := os.Stat("internal/lib"); err == nil {
		return errors.New("internal/lib exists: the tree is regrouped already")
	}
	out, err := exec.Command("git", "status", "--porcelain").Output()
	if err != nil {
		return fmt.Errorf("git status: %v", err)
	}
	if len(out) > 0 {
		return fmt.Errorf("the tree has changes; commit or stash them first:\n%s", out)
	}
	return nil
}

// files lists the module's Go files and the text files that may name package paths, leaving
// out other modules, test data, and this tool and the layering check (whose texts name paths
// on purpose).
func files() (goFiles, textFiles []string, err error) {
	out, err := exec.Command("git", "ls-files").Output()
	if err != nil {
		return nil, nil, fmt.Errorf("git ls-files: %v", err)
	}
	for _, f := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if skip(f) {
			continue
		}
		switch ext := filepath.Ext(f); {
		case ext == ".go":
			goFiles = append(goFiles, f)
		case ext == ".md" || ext == ".sh" || ext == ".txt" || filepath.Base(f) == "Makefile" ||
			strings.HasPrefix(f, ".notes/") || strings.HasPrefix(f, ".ci/") || strings.HasPrefix(f, "hack/conformance/shim/"):
			textFiles = append(textFiles, f)
		}
	}
	return goFiles, textFiles, nil
}

func skip(f string) bool {
	for _, p := range []string{dir + "/", "hack/checklayers/", "test/harness/", "test/registry/", "test/runtime2/", "_output/"} {
		if strings.HasPrefix(f, p) {
			return true
		}
	}
	return strings.Contains(f, "/testdata/")
}

func rewriteFile(f string, change func([]byte) ([]byte, error)) error {
	src, err := os.ReadFile(f)
	if err != nil {
		return err
	}
	out, err := change(src)
	if err != nil {
		return fmt.Errorf("%s: %w", f, err)
	}
	if bytes.Equal(out, src) {
		return nil
	}
	return os.WriteFile(f, out, 0o644)
}

// move git-moves a package directory; into an existing one (runpod into podrun) file by file.
func move(from, to string) error {
	if from == to {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		return err
	}
	if strings.HasPrefix(to, from+"/") { // runtime into runtime/kuberuntime: by way of a spare name
		spare := from + ".regroup"
		if err := run("git", "mv", from, spare); err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
			return err
		}
		from = spare
	}
	if _, err := os.Stat(to); errors.Is(err, os.ErrNotExist) {
		return run("git", "mv", from, to)
	}
	entries, err := os.ReadDir(from)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if _, err := os.Stat(filepath.Join(to, e.Name())); err == nil {
			return fmt.Errorf("%s joins %s, which has a %s already", from, to, e.Name())
		}
		if err := run("git", "mv", filepath.Join(from, e.Name()), filepath.Join(to, e.Name())); err != nil {
			return err
		}
	}
	return os.Remove(from)
}

// install puts the layering rules and the architecture page in place, has `make unit` run the
// layering check beside the dependency check, and removes this tool.
func install() error {
	for src, dst := range map[string]string{"layers.txt": "hack/layers.txt", "architecture.md": "docs/architecture.md"} {
		data, err := os.ReadFile(filepath.Join(dir, src))
		if err != nil {
			return err
		}
		if err := os.WriteFile(dst, data, 0o644); err != nil {
			return err
		}
	}
	mk, err := os.ReadFile("Makefile")
	if err != nil {
		return err
	}
	const after = "\thack/check-deps.sh\n"
	if !bytes.Contains(mk, []byte(after)) {
		return errors.New("Makefile: no line running hack/check-deps.sh to put the layering check beside")
	}
	mk = bytes.Replace(mk, []byte(after), []byte(after+"\t$(GO) run ./hack/checklayers\n"), 1)
	mk = bytes.Replace(mk, []byte("after the dependency and doc-link\n# checks"), []byte("after the dependency, layering\n# and doc-link checks"), 1)
	if err := os.WriteFile("Makefile", mk, 0o644); err != nil {
		return err
	}
	return run("git", "rm", "-r", "-q", dir)
}

func run(args ...string) error {
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: %v", strings.Join(args, " "), err)
	}
	return nil
}
