// Command consts lists the numeric constants of package sgmcmc and of its
// internal packages (sgmcmc/internal/...): the unexported ones, and the
// exported ones of the internal packages, which nothing outside the module
// can see either. For each it says whether a _test.go file names it and
// which kind it is:
//
//   - stream: a random-stream offset or seed constant (streams.go);
//   - threshold: a convergence threshold (thresholds.go);
//   - format: a file-format version or magic number;
//   - enum: a member of an iota enumeration;
//   - limit: a bound that FitSettings' validation enforces, which only
//     rejects input (listed in limits below);
//   - tuning: everything else, a number that trades one thing for
//     another (accuracy, speed, robustness).
//
// Stream, threshold and format constants are fixed by the draws and the
// files they define; tuning constants should each have a test that shows
// their effect. The command prints the counts and the
// tuning constants that no test names; -all prints every constant.
//
// A test "names" a constant when a _test.go file of the constant's own
// package uses the identifier (or, for an exported constant, any _test.go
// in the module uses pkg.Name). A constant declared inside a function
// cannot be named by a test and is always listed as untested.
//
// Usage, from the module's root: go run ./internal/cmd/consts [-all] [DIR]
// where DIR (default sgmcmc) is the package directory to inventory.
package main

import (
	"flag"
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

// constant is one declared numeric constant.
type constant struct {
	pkgDir, file string
	line         int
	name, value  string
	local        string // enclosing function, if declared in one
	kind         string
	tested       bool
}

func main() {
	all := flag.Bool("all", false, "print every constant, not only the untested tuning ones")
	flag.Parse()
	root := "sgmcmc"
	if flag.NArg() > 0 {
		root = flag.Arg(0)
	}
	consts, err := collect(root)
	if err != nil {
		fmt.Fprintln(os.Stderr, "consts:", err)
		os.Exit(2)
	}
	if err := markTested(".", consts); err != nil {
		fmt.Fprintln(os.Stderr, "consts:", err)
		os.Exit(2)
	}
	sort.Slice(consts, func(i, j int) bool {
		a, b := consts[i], consts[j]
		if a.file != b.file {
			return a.file < b.file
		}
		return a.line < b.line
	})
	count := map[string][2]int{}
	var kinds []string
	for _, c := range consts {
		n, ok := count[c.kind]
		if !ok {
			kinds = append(kinds, c.kind)
		}
		n[0]++
		if c.tested {
			n[1]++
		}
		count[c.kind] = n
		if *all || (c.kind == "tuning" && !c.tested) {
			fmt.Println(c)
		}
	}
	sort.Strings(kinds)
	fmt.Printf("%d numeric constants:", len(consts))
	for _, k := range kinds {
		fmt.Printf(" %s %d (%d named by a test)", k, count[k][0], count[k][1])
	}
	fmt.Println()
	t := count["tuning"]
	fmt.Printf("%d tuning constants that no test names\n", t[0]-t[1])
}

func (c constant) String() string {
	tested := "untested"
	if c.tested {
		tested = "tested"
	}
	name := c.name
	if c.local != "" {
		name = c.local + "." + c.name
	}
	return fmt.Sprintf("%s:%d\t%s = %s\t%s\t%s", c.file, c.line, name, c.value, c.kind, tested)
}

// collect parses the non-test Go files under root and returns their
// numeric constants (unexported ones, and exported ones under an internal
// directory).
func collect(root string) ([]*constant, error) {
	var out []*constant
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		f, err := parser.ParseFile(fset, path, src, 0)
		if err != nil {
			return err
		}
		internal := strings.Contains(filepath.ToSlash(path), "/internal/")
		add := func(gd *ast.GenDecl, local string) {
			for _, c := range fromDecl(fset, src, gd) {
				if ast.IsExported(c.name) && (!internal || local != "") {
					continue
				}
				c.pkgDir, c.file, c.local = filepath.Dir(path), path, local
				c.kind = kindOf(c, gd)
				out = append(out, c)
			}
		}
		for _, decl := range f.Decls {
			switch d := decl.(type) {
			case *ast.GenDecl:
				add(d, "")
			case *ast.FuncDecl:
				if d.Body == nil {
					continue
				}
				ast.Inspect(d.Body, func(n ast.Node) bool {
					if gd, ok := n.(*ast.GenDecl); ok {
						add(gd, d.Name.Name)
					}
					return true
				})
			}
		}
		return nil
	})
	return out, err
}

// fromDecl returns the numeric constants of a const declaration. A spec
// without values repeats the previous one's (iota), and a value is numeric
// when it holds no string literal.
func fromDecl(fset *token.FileSet, src []byte, gd *ast.GenDecl) []*constant {
	if gd.Tok != token.CONST {
		return nil
	}
	var out []*constant
	var last []ast.Expr
	for _, spec := range gd.Specs {
		vs := spec.(*ast.ValueSpec)
		vals := vs.Values
		if len(vals) == 0 {
			vals = last
		}
		last = vals
		for i, id := range vs.Names {
			if id.Name == "_" || i >= len(vals) || !numeric(vals[i]) {
				continue
			}
			text := string(src[fset.Position(vals[i].Pos()).Offset:fset.Position(vals[i].End()).Offset])
			if len(vs.Values) == 0 {
				text = "(" + text + ")"
			}
			out = append(out, &constant{line: fset.Position(id.Pos()).Line, name: id.Name, value: text})
		}
	}
	return out
}

func numeric(e ast.Expr) bool {
	ok := true
	ast.Inspect(e, func(n ast.Node) bool {
		if bl, isLit := n.(*ast.BasicLit); isLit && (bl.Kind == token.STRING || bl.Kind == token.CHAR) {
			ok = false
		}
		return ok
	})
	return ok
}

// limits are the constants of kind limit.
var limits = map[string]bool{"maxNoiseProbes": true, "maxChains": true, "maxThin": true}

// kindOf classifies a constant (see the package comment).
func kindOf(c *constant, gd *ast.GenDecl) string {
	base := filepath.Base(c.file)
	lname := strings.ToLower(c.name)
	switch {
	case limits[c.name] && c.local == "":
		return "limit"
	case base == "streams.go":
		return "stream"
	case base == "thresholds.go":
		return "threshold"
	case strings.Contains(lname, "format") || strings.Contains(lname, "version") || strings.Contains(lname, "magic"):
		return "format"
	case usesIota(gd):
		return "enum"
	}
	return "tuning"
}

func usesIota(gd *ast.GenDecl) bool {
	found := false
	ast.Inspect(gd, func(n ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok && id.Name == "iota" {
			found = true
		}
		return !found
	})
	return found
}

// markTested sets tested on every constant that a _test.go file under
// root names: by its identifier in its own package's directory, or as
// pkg.Name anywhere when it is exported.
func markTested(root string, consts []*constant) error {
	fset := token.NewFileSet()
	return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		dir := filepath.Dir(path)
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.SelectorExpr:
				x, ok := n.X.(*ast.Ident)
				for _, c := range consts {
					if ok && c.local == "" && n.Sel.Name == c.name && x.Name == filepath.Base(c.pkgDir) {
						c.tested = true
					}
				}
			case *ast.Ident:
				for _, c := range consts {
					if c.local == "" && n.Name == c.name && dir == c.pkgDir {
						c.tested = true
					}
				}
			}
			return true
		})
		return nil
	})
}
