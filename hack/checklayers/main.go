// Command checklayers fails if a package under internal/ imports a group it may not: the groups
// (a package's group is the first element of its path under internal/) and the groups each may
// import are listed in a rules file (hack/layers.txt), lowest first. It reads the imports of the
// packages' non-test files with `go list`, so it sees what the binary links; a test file may
// import across groups. No non-test file may import a test-only package (testutil, fake*, *test).
// `make unit` runs it.
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path"
	"sort"
	"strings"
)

func main() {
	rulesPath := flag.String("rules", "hack/layers.txt", "the groups and what each may import")
	dir := flag.String("C", ".", "the module to check")
	flag.Parse()
	problems, err := run(*dir, *rulesPath)
	if err != nil {
		fmt.Fprintln(os.Stderr, "checklayers:", err)
		os.Exit(2)
	}
	if len(problems) > 0 {
		fmt.Fprintln(os.Stderr, "imports that run against the layering in "+*rulesPath+":")
		for _, p := range problems {
			fmt.Fprintln(os.Stderr, "  "+p)
		}
		os.Exit(1)
	}
	fmt.Println("layer check: ok")
}

// run checks the module in dir against the rules file (relative to dir unless absolute).
func run(dir, rulesPath string) ([]string, error) {
	if !path.IsAbs(rulesPath) {
		rulesPath = path.Join(dir, rulesPath)
	}
	f, err := os.Open(rulesPath)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r, err := parseRules(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", rulesPath, err)
	}
	module, imports, err := listImports(dir)
	if err != nil {
		return nil, err
	}
	return r.check(module+"/internal/", imports), nil
}

// rules maps each group to the groups it may import ("*": any).
type rules map[string]map[string]bool

func parseRules(f *os.File) (rules, error) {
	r := rules{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line, _, _ := strings.Cut(sc.Text(), "#")
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		if r[fields[0]] != nil {
			return nil, fmt.Errorf("line %d: group %s listed twice", n, fields[0])
		}
		allowed := map[string]bool{}
		for _, g := range fields[1:] {
			if g != "*" && r[g] == nil {
				return nil, fmt.Errorf("line %d: %s may import %s, which is not listed above it", n, fields[0], g)
			}
			allowed[g] = true
		}
		r[fields[0]] = allowed
	}
	return r, sc.Err()
}

// listImports runs go list in dir: the module path and each internal package's imports.
func listImports(dir string) (string, map[string][]string, error) {
	cmd := exec.Command("go", "list", "-f", "{{.Module.Path}} {{.ImportPath}} {{join .Imports \" \"}}", "./internal/...")
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", nil, fmt.Errorf("go list: %v: %s", err, stderr.String())
	}
	module, imports := "", map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		if len(fields) < 2 {
			continue
		}
		module = fields[0]
		imports[fields[1]] = fields[2:]
	}
	return module, imports, nil
}

// check lists every import of one internal package by another that the rules do not allow, and
// every internal package in no group.
func (r rules) check(prefix string, imports map[string][]string) []string {
	var problems []string
	for pkg, deps := range imports {
		rel, ok := strings.CutPrefix(pkg, prefix)
		if !ok {
			continue
		}
		from := group(rel)
		allowed := r[from]
		if allowed == nil {
			problems = append(problems, fmt.Sprintf("%s: in no group (add internal/%s to the rules, or move the package into a group)", pkg, from))
			continue
		}
		for _, dep := range deps {
			drel, ok := strings.CutPrefix(dep, prefix)
			if !ok {
				continue
			}
			switch to := group(drel); {
			case testOnly(drel) && !testOnly(rel):
				problems = append(problems, fmt.Sprintf("%s imports %s: a test-only package", pkg, dep))
			case to != from && !allowed["*"] && !allowed[to]:
				problems = append(problems, fmt.Sprintf("%s imports %s: group %s may not import group %s", pkg, dep, from, to))
			}
		}
	}
	sort.Strings(problems)
	return problems
}

func group(rel string) string {
	g, _, _ := strings.Cut(rel, "/")
	return g
}

// testOnly says whether a package exists for tests alone.
func testOnly(rel string) bool {
	name := path.Base(rel)
	return rel == "testutil" || strings.HasPrefix(rel, "testutil/") || strings.HasPrefix(name, "fake") || strings.HasSuffix(name, "test")
}
