package main

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// pathRewriter rewrites every mention of a moved directory under internal/ (an import path, a
// ./internal/... package pattern, a file path in a comment or a page).
type pathRewriter struct {
	olds []string // longest first, so that cm/topology wins over cm
	new  map[string]string
}

func (pl *plan) pathRewriter() *pathRewriter {
	r := &pathRewriter{new: map[string]string{}}
	for _, m := range pl.moves {
		if m[0] != m[1] {
			r.new[m[0]] = m[1]
			r.olds = append(r.olds, m[0])
		}
	}
	sort.Slice(r.olds, func(i, j int) bool { return len(r.olds[i]) > len(r.olds[j]) })
	return r
}

func wordByte(c byte) bool {
	return c == '_' || c == '-' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

// rewrite rewrites src in one pass: a rewritten path is never looked at again.
func (r *pathRewriter) rewrite(src []byte) []byte {
	const prefix = "internal/"
	var out []byte
	at := 0
	for {
		i := bytes.Index(src[at:], []byte(prefix))
		if i < 0 {
			return append(out, src[at:]...)
		}
		start := at + i
		rest := src[start+len(prefix):]
		out = append(out, src[at:start+len(prefix)]...)
		at = start + len(prefix)
		if start > 0 && wordByte(src[start-1]) {
			continue
		}
		for _, old := range r.olds {
			if bytes.HasPrefix(rest, []byte(old)) && (len(rest) == len(old) || !wordByte(rest[len(old)])) {
				out = append(out, r.new[old]...)
				at += len(old)
				break
			}
		}
	}
}

// qualRewriter rewrites mentions of a renamed package's exported identifiers in prose
// ("runtime.Manager" → "kuberuntime.Manager", "runpod.Pod" → "podrun.LocalPod"): in comments
// of Go files (code is renamed through its syntax tree) and anywhere in pages.
type qualRewriter struct {
	re *regexp.Regexp
	to map[string]string // "runtime.Manager" → "kuberuntime.Manager"
}

func (pl *plan) qualRewriter() (*qualRewriter, error) {
	q := &qualRewriter{to: map[string]string{}}
	var alts []string
	for _, m := range pl.pkgs {
		if m.oldName == m.newName {
			continue
		}
		names, err := exportedNames(strings.TrimPrefix(m.oldPath, module+"/"))
		if err != nil {
			return nil, err
		}
		for _, n := range names {
			to := n
			if r, ok := pl.idents[m.oldPath][n]; ok {
				to = r
			}
			q.to[m.oldName+"."+n] = m.newName + "." + to
			alts = append(alts, regexp.QuoteMeta(m.oldName+"."+n))
		}
	}
	sort.Slice(alts, func(i, j int) bool { return len(alts[i]) > len(alts[j]) })
	re, err := regexp.Compile(`(^|[^\w.])(` + strings.Join(alts, "|") + `)\b`)
	q.re = re
	return q, err
}

// exportedNames are the exported top-level identifiers a package's non-test files declare.
func exportedNames(dir string) ([]string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	var names []string
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		for _, d := range file.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil && d.Name.IsExported() {
					names = append(names, d.Name.Name)
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						if s.Name.IsExported() {
							names = append(names, s.Name.Name)
						}
					case *ast.ValueSpec:
						for _, n := range s.Names {
							if n.IsExported() {
								names = append(names, n.Name)
							}
						}
					}
				}
			}
		}
	}
	return names, nil
}

func (q *qualRewriter) text(src []byte) []byte {
	return q.re.ReplaceAllFunc(src, func(m []byte) []byte {
		sub := q.re.FindSubmatch(m)
		return append(append([]byte{}, sub[1]...), q.to[string(sub[2])]...)
	})
}

// comments rewrites only the lines of Go source that are comments.
func (q *qualRewriter) comments(src []byte) []byte {
	lines := bytes.SplitAfter(src, []byte("\n"))
	for i, l := range lines {
		if bytes.HasPrefix(bytes.TrimLeft(l, " \t"), []byte("//")) {
			lines[i] = q.text(l)
		}
	}
	return bytes.Join(lines, nil)
}
