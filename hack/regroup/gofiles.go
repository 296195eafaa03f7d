package main

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// edit replaces src[start:end] with text.
type edit struct {
	start, end int
	text       string
}

func apply(src []byte, edits []edit) ([]byte, error) {
	sort.Slice(edits, func(i, j int) bool { return edits[i].start < edits[j].start })
	var out bytes.Buffer
	at := 0
	for _, e := range edits {
		if e.start < at {
			return nil, fmt.Errorf("overlapping edits at offset %d", e.start)
		}
		out.Write(src[at:e.start])
		out.WriteString(e.text)
		at = e.end
	}
	out.Write(src[at:])
	return out.Bytes(), nil
}

// rewriteGo renames what the move renames in one Go file at file (its path before the move):
// its package clause and doc comment if its package is renamed, the qualifiers and identifiers
// of the packages it imports, and the imports that become its own package or duplicates. Import
// paths themselves are left to the path rewrite that follows.
func (pl *plan) rewriteGo(file string, src []byte) ([]byte, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, file, src, parser.ParseComments)
	if err != nil {
		return nil, err
	}
	off := func(p token.Pos) int { return fset.Position(p).Offset }
	var edits []edit
	own := pl.pkgs[module+"/"+filepath.ToSlash(filepath.Dir(file))]
	if own != nil {
		edits = append(edits, pl.ownPackage(f, own, src, off)...)
	}
	quals, importEdits := pl.importQuals(f, own, src, off)
	edits = append(edits, importEdits...)
	ast.Inspect(f, func(n ast.Node) bool {
		sel, ok := n.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		x, ok := sel.X.(*ast.Ident)
		if !ok || x.Obj != nil {
			return true
		}
		q, ok := quals[x.Name]
		if !ok {
			return true
		}
		if q.to == "" {
			edits = append(edits, edit{off(x.Pos()), off(sel.Sel.Pos()), ""})
		} else if q.to != x.Name {
			edits = append(edits, edit{off(x.Pos()), off(x.End()), q.to})
		}
		if to, ok := q.idents[sel.Sel.Name]; ok {
			edits = append(edits, edit{off(sel.Sel.Pos()), off(sel.Sel.End()), to})
		}
		return false
	})
	return apply(src, edits)
}

// qual is what the uses of one import's qualifier become: the new qualifier ("" drops it, the
// package being the file's own now) and the identifiers renamed.
type qual struct {
	to     string
	idents map[string]string
}

// importQuals works out, for each moved package the file imports, what its qualifier becomes,
// and deletes the imports that become the file's own package or a duplicate (podrun and runpod).
func (pl *plan) importQuals(f *ast.File, own *pkgMove, src []byte, off func(token.Pos) int) (map[string]qual, []edit) {
	var edits []edit
	quals := map[string]qual{}
	seen := map[string]string{} // new import path → local name kept
	for _, spec := range f.Imports {
		ipath, _ := strconv.Unquote(spec.Path.Value)
		m := pl.pkgs[ipath]
		if m == nil {
			continue
		}
		local, explicit := m.oldName, spec.Name != nil
		if explicit {
			local = spec.Name.Name
		}
		if local == "_" || local == "." {
			continue
		}
		q := qual{to: local, idents: pl.idents[ipath]}
		kept, dup := seen[m.newPath]
		switch {
		case own != nil && m.newPath == own.newPath && !strings.HasSuffix(f.Name.Name, "_test"):
			q.to = ""
			edits = append(edits, deleteLine(src, off(spec.Pos()), off(spec.End())))
		case dup:
			q.to = kept
			edits = append(edits, deleteLine(src, off(spec.Pos()), off(spec.End())))
		case !explicit:
			q.to = m.newName
		}
		if !dup && q.to != "" {
			seen[m.newPath] = q.to
		}
		if q.to != local || q.idents != nil {
			quals[local] = q
		}
	}
	return quals, edits
}

// ownPackage renames a renamed package's clause, its doc comment and the identifiers it
// declares that moves.txt renames.
func (pl *plan) ownPackage(f *ast.File, own *pkgMove, src []byte, off func(token.Pos) int) []edit {
	var edits []edit
	if own.oldName != own.newName {
		name := own.newName
		if strings.HasSuffix(f.Name.Name, "_test") {
			name += "_test"
		}
		edits = append(edits, edit{off(f.Name.Pos()), off(f.Name.End()), name})
		if f.Doc != nil {
			start, end := off(f.Doc.Pos()), off(f.Doc.End())
			doc := string(src[start:end])
			if pl.joins(own) {
				// One package doc is enough: this one becomes a comment on the file.
				doc = strings.Replace(doc, "// Package "+own.oldName+" is ", "// This file holds ", 1)
				doc = regexp.MustCompile(`\b`+own.newName+`\.([A-Z])`).ReplaceAllString(doc, "$1") + "\n"
			} else {
				doc = strings.Replace(doc, "// Package "+own.oldName+" ", "// Package "+own.newName+" ", 1)
			}
			edits = append(edits, edit{start, end, doc})
		}
	}
	renames := pl.idents[own.oldPath]
	if renames == nil {
		return edits
	}
	declared := map[*ast.Object]bool{}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Recv == nil && d.Name.Obj != nil {
				declared[d.Name.Obj] = true
			}
			edits = append(edits, renameDoc(d.Doc, d.Name.Name, renames, src, off)...)
		case *ast.GenDecl:
			for _, s := range d.Specs {
				if ts, ok := s.(*ast.TypeSpec); ok && ts.Name.Obj != nil {
					declared[ts.Name.Obj] = true
					edits = append(edits, renameDoc(d.Doc, ts.Name.Name, renames, src, off)...)
				}
			}
		}
	}
	unresolved := map[*ast.Ident]bool{}
	for _, id := range f.Unresolved {
		unresolved[id] = true
	}
	// Every identifier but the selected side of a selector (a field or method, or another
	// package's name) may name one of this package's declarations.
	var visit func(n ast.Node) bool
	visit = func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.SelectorExpr:
			ast.Inspect(n.X, visit)
			return false
		case *ast.Ident:
			if to, ok := renames[n.Name]; ok && (declared[n.Obj] || unresolved[n]) {
				edits = append(edits, edit{off(n.Pos()), off(n.End()), to})
			}
		}
		return true
	}
	ast.Inspect(f, visit)
	return edits
}

// renameDoc renames the first word of a renamed declaration's doc comment.
func renameDoc(doc *ast.CommentGroup, name string, renames map[string]string, src []byte, off func(token.Pos) int) []edit {
	to, ok := renames[name]
	if !ok || doc == nil || !strings.HasPrefix(doc.List[0].Text, "// "+name+" ") {
		return nil
	}
	start := off(doc.List[0].Pos()) + 3
	return []edit{{start, start + len(name), to}}
}

// deleteLine deletes an import spec and the rest of its line.
func deleteLine(src []byte, start, end int) edit {
	for start > 0 && (src[start-1] == ' ' || src[start-1] == '\t') {
		start--
	}
	if i := bytes.IndexByte(src[end:], '\n'); i >= 0 {
		end += i + 1
	}
	return edit{start, end, ""}
}
