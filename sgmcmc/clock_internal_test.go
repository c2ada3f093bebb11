package sgmcmc

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestNoClockInDecisions checks that the package reads the wall clock only
// where no draw depends on it: Run's user time budget (Settings.Runtime,
// MaxTime) and its elapsed-time bookkeeping, the progress Printer, and the
// timings a Posterior reports. Every decision Fit makes (which gradient,
// how long to sample, whether to extend) is planned in counted work
// (cost.go), so the same seed gives the same draws on an idle machine and
// a saturated one. A new time.Now, time.Since or time.Until anywhere else
// fails this test: make the decision count work instead, or add the
// function here if it only reports.
func TestNoClockInDecisions(t *testing.T) {
	allowed := map[string][]string{
		"run.go":        {"Run", "run", "record"},  // Settings.Runtime (the user's budget) and the elapsed times reported
		"run_phases.go": {"finish"},                // Result.Runtime
		"recorder.go":   {"Init", "Record"},        // Printer's rate and ETA
		"fit.go":        {"Fit"},                   // Posterior.Total
		"prepare.go":    {"prepare"},               // Preparation.Seconds
		"sample.go":     {"sample", "chainBudget"}, // Posterior.Total; MaxTime (the user's budget, read only when set)
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range file.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				sel, ok := n.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				if id, ok := sel.X.(*ast.Ident); ok && id.Name == "time" && slices.Contains([]string{"Now", "Since", "Until"}, sel.Sel.Name) {
					if !slices.Contains(allowed[name], fn.Name.Name) {
						t.Errorf("%s: %s reads the clock (time.%s at %v): a decision that changes draws must count work", name, fn.Name.Name, sel.Sel.Name, fset.Position(sel.Pos()))
					}
				}
				return true
			})
		}
	}
}
