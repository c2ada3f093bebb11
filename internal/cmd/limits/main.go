// Command limits checks the size limits of the module's Go code and
// prints every violation:
//
//   - no non-test function or method outside examples/ longer than
//     120 lines (from its func keyword to its closing brace);
//   - no Go file longer than 800 lines;
//   - no directory holding more than 30% of the non-test Go lines.
//
// It exits with status 1 when there is a violation, 0 otherwise.
//
// Usage, from the module's root: go run ./internal/cmd/limits [DIR]
package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

const (
	maxFuncLines = 120
	maxFileLines = 800
	maxDirShare  = 0.30
)

type violation struct {
	kind, where string
	n           int
}

func main() {
	root := "."
	if len(os.Args) > 1 {
		root = os.Args[1]
	}
	var out []violation
	dirLines := map[string]int{}
	total := 0
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		lines := strings.Count(string(src), "\n")
		if len(src) > 0 && src[len(src)-1] != '\n' {
			lines++
		}
		rel, _ := filepath.Rel(root, path)
		if lines > maxFileLines {
			out = append(out, violation{"file", rel, lines})
		}
		if strings.HasSuffix(name, "_test.go") {
			return nil
		}
		dirLines[filepath.Dir(rel)] += lines
		total += lines
		if rel == "examples" || strings.HasPrefix(rel, "examples"+string(filepath.Separator)) {
			return nil
		}
		f, err := parser.ParseFile(fset, path, src, 0)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			n := fset.Position(fn.End()).Line - fset.Position(fn.Pos()).Line + 1
			if n > maxFuncLines {
				out = append(out, violation{"func", fmt.Sprintf("%s:%d %s", rel, fset.Position(fn.Pos()).Line, funcName(fn)), n})
			}
		}
		return nil
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "limits:", err)
		os.Exit(2)
	}
	for dir, n := range dirLines {
		if total > 0 && float64(n) > maxDirShare*float64(total) {
			out = append(out, violation{"dir", dir, n})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].kind != out[j].kind {
			return out[i].kind < out[j].kind
		}
		return out[i].n > out[j].n
	})
	for _, v := range out {
		switch v.kind {
		case "func":
			fmt.Printf("function longer than %d lines: %s: %d lines\n", maxFuncLines, v.where, v.n)
		case "file":
			fmt.Printf("file longer than %d lines: %s: %d lines\n", maxFileLines, v.where, v.n)
		case "dir":
			fmt.Printf("directory with more than %.0f%% of the non-test Go lines: %s: %d of %d (%.1f%%)\n",
				100*maxDirShare, v.where, v.n, total, 100*float64(v.n)/float64(total))
		}
	}
	fmt.Printf("%d violations (%d non-test Go lines)\n", len(out), total)
	if len(out) > 0 {
		os.Exit(1)
	}
}

func funcName(fn *ast.FuncDecl) string {
	if fn.Recv == nil || len(fn.Recv.List) == 0 {
		return fn.Name.Name
	}
	t := fn.Recv.List[0].Type
	star := ""
	if s, ok := t.(*ast.StarExpr); ok {
		t, star = s.X, "*"
	}
	if ix, ok := t.(*ast.IndexExpr); ok {
		t = ix.X
	}
	if id, ok := t.(*ast.Ident); ok {
		return "(" + star + id.Name + ")." + fn.Name.Name
	}
	return fn.Name.Name
}
