package main

import (
	"bufio"
	"fmt"
	"go/parser"
	"go/token"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

const module = "github.com/nodelet/nodelet"

// plan is the whole move, worked out from moves.txt and the tree before anything changes.
type plan struct {
	moves  [][2]string                  // old → new directory under internal/, nested ones first
	pkgs   map[string]*pkgMove          // by old import path, every package under internal/
	idents map[string]map[string]string // old import path → identifier → new identifier
}

// pkgMove is one package's move.
type pkgMove struct {
	oldPath, newPath string // import paths
	oldName, newName string // package names
}

// joins says whether the package joins another one at its new path (runpod into podrun): its
// package doc comment then becomes a file comment.
func (pl *plan) joins(m *pkgMove) bool {
	for _, o := range pl.pkgs {
		if o != m && o.newPath == m.newPath && m.oldName != m.newName {
			return true
		}
	}
	return false
}

// readPlan reads moves.txt and the package clauses of every package under internal/.
func readPlan(movesFile string) (*plan, error) {
	pl := &plan{pkgs: map[string]*pkgMove{}, idents: map[string]map[string]string{}}
	f, err := os.Open(movesFile)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line, _, _ := strings.Cut(sc.Text(), "#")
		fields := strings.Fields(line)
		switch {
		case len(fields) == 0:
		case len(fields) == 3 && fields[0] == "ident":
			pkg, name, ok := strings.Cut(fields[1], ".")
			if !ok {
				return nil, fmt.Errorf("%s:%d: want ident <package>.<name> <new name>", movesFile, n)
			}
			oldPath := module + "/internal/" + pkg
			if pl.idents[oldPath] == nil {
				pl.idents[oldPath] = map[string]string{}
			}
			pl.idents[oldPath][name] = fields[2]
		case len(fields) == 2:
			if _, err := os.Stat(filepath.Join("internal", fields[0])); err != nil {
				return nil, fmt.Errorf("%s:%d: internal/%s: %v (already regrouped, or the tree changed?)", movesFile, n, fields[0], err)
			}
			pl.moves = append(pl.moves, [2]string{fields[0], fields[1]})
		default:
			return nil, fmt.Errorf("%s:%d: want <old dir> <new dir>", movesFile, n)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	// Nested directories move before their parents (cm/topology out of cm).
	sort.SliceStable(pl.moves, func(i, j int) bool {
		return strings.Count(pl.moves[i][0], "/") > strings.Count(pl.moves[j][0], "/")
	})
	return pl, pl.readPackages()
}

// newDir maps a directory under internal/ to its new place; false if no move covers it.
func (pl *plan) newDir(rel string) (string, bool) {
	for _, m := range pl.moves {
		if rel == m[0] || strings.HasPrefix(rel, m[0]+"/") {
			return m[1] + rel[len(m[0]):], true
		}
	}
	return "", false
}

// readPackages finds every package under internal/ and what it becomes.
func (pl *plan) readPackages() error {
	var unmapped []string
	err := filepath.WalkDir("internal", func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		if d.Name() == "testdata" {
			return filepath.SkipDir
		}
		name, err := packageName(p)
		if err != nil || name == "" {
			return err
		}
		rel := filepath.ToSlash(strings.TrimPrefix(p, "internal/"))
		nd, ok := pl.newDir(rel)
		if !ok {
			unmapped = append(unmapped, p)
			return nil
		}
		m := &pkgMove{oldPath: module + "/internal/" + rel, newPath: module + "/internal/" + nd, oldName: name, newName: name}
		if path.Base(rel) != path.Base(nd) && name == path.Base(rel) {
			m.newName = path.Base(nd)
		}
		pl.pkgs[m.oldPath] = m
		return nil
	})
	if err == nil && len(unmapped) > 0 {
		err = fmt.Errorf("packages no line of moves.txt places: %s", strings.Join(unmapped, ", "))
	}
	return err
}

// packageName is the package clause of the non-test Go files in dir ("" if none).
func packageName(dir string) (string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return "", err
	}
	name := ""
	for _, f := range files {
		file, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.PackageClauseOnly)
		if err != nil {
			return "", err
		}
		if n := file.Name.Name; !strings.HasSuffix(n, "_test") {
			name = n
		} else if name == "" {
			name = strings.TrimSuffix(n, "_test")
		}
	}
	return name, nil
}
