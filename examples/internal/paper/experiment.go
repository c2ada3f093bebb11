package paper

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"

	"github.com/pbsgmcmc/pbsgmcmc/examples/internal/compare"
	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

// Experiment is one comparison of a paper-protocol command: the methods on
// one model and training data set, scored by the KSD and reported against
// one of the paper's tables.
type Experiment struct {
	// Name names the output files (results_<Name>.json, ...) and Label
	// starts the progress lines and error messages ("svm", "T=1000").
	Name, Label string
	// Model, with the filter's proposal applied, and the training data.
	Model ssm.Model
	Data  ssm.Dataset
	// Methods are the gradient estimators compared.
	Methods []compare.Method
	// Start holds the natural parameters the chains start from (plus
	// jitter on the unconstrained scale).
	Start []float64
	// Truth holds the natural parameters that generated synthetic data:
	// it enables the MSE traces and plots. Without it the first chain's
	// trace is plotted.
	Truth []float64
	// Score is the full-data gradient giving the KSD's reference score.
	Score Estimators

	// Paper is the paper's table the report compares with.
	Paper compare.PaperTable
	// Title and Note frame the report's heading, "=== Title (n s)Note ===";
	// Versus heads the comparison with the paper, Means the posterior
	// means, and Plot titles the plots.
	Title, Note, Versus, Means, Plot string
	// Reduce, when set, maps the comparison's result to the one reported,
	// written and plotted, before After sees it (lgssmd sums the KSD of the
	// d² + 2d coordinates into the parameter groups A, σ, τ). Nil reports
	// the comparison's result itself.
	Reduce func(res *compare.Result) (*compare.Result, error)
	// After, when set, computes the command's own results from the
	// comparison's (realdata's held-out predictive fit).
	After func(ctx context.Context, res *compare.Result) (Extra, error)
}

// Extra is a command's own result beyond the KSD comparison.
type Extra interface {
	// WriteText writes it to stdout after the report.
	WriteText(w io.Writer) error
	// WriteJSON writes results_<Name>.json in place of the comparison's
	// summary alone.
	WriteJSON(w io.Writer) error
}

// Run creates f.Out, writes header to stdout, runs the experiments in
// order, writing each one's report and output files, and ends with the
// output directory. Progress goes to stderr.
func Run(ctx context.Context, stdout, stderr io.Writer, f *Flags, header string, exps []Experiment) error {
	if err := os.MkdirAll(f.Out, 0o755); err != nil {
		return err
	}
	if _, err := io.WriteString(stdout, header); err != nil {
		return err
	}
	for k, ex := range exps {
		if err := f.run(ctx, stdout, stderr, ex, uint64(k)); err != nil {
			return fmt.Errorf("%s: %w", ex.Label, err)
		}
	}
	fmt.Fprintf(stdout, "\nOutputs in %s\n", f.Out)
	return nil
}

// run runs experiment ex, the stream-th of its command.
func (f *Flags) run(ctx context.Context, stdout, stderr io.Writer, ex Experiment, stream uint64) error {
	start := make([]float64, ex.Model.Dims().Param)
	if err := ex.Model.Unconstrain(start, ex.Start); err != nil {
		return err
	}
	set := f.Settings()
	set.Model, set.Obs, set.Seed = ex.Model, ex.Data.TotalLen(), f.Seed+stream<<20
	set.Init = compare.JitteredInit(start, f.Chains, 0.1, rand.New(rand.NewPCG(f.Seed, 1000+stream)))
	set.NewScore = ex.Score.Full
	set.Truth, set.Progress, set.Prefix = ex.Truth, stderr, ex.Label+" "
	t0 := time.Now()
	res, err := compare.Run(ctx, ex.Methods, set)
	if err != nil {
		return err
	}
	if ex.Reduce != nil {
		if res, err = ex.Reduce(res); err != nil {
			return err
		}
	}
	var extra Extra
	if ex.After != nil {
		if extra, err = ex.After(ctx, res); err != nil {
			return err
		}
	}
	fmt.Fprintf(stdout, "\n=== %s (%.0f s)%s ===\n", ex.Title, time.Since(t0).Seconds(), ex.Note)
	if err := compare.WriteReport(stdout, res, f.Chains, ex.Paper, ex.Versus, ex.Means); err != nil {
		return err
	}
	write := res.WriteJSON
	if extra != nil {
		if err := extra.WriteText(stdout); err != nil {
			return err
		}
		write = extra.WriteJSON
	}
	if err := compare.WriteFile(filepath.Join(f.Out, "results_"+ex.Name+".json"), write); err != nil {
		return err
	}
	kind, plot := "mse", compare.PlotMSE
	if ex.Truth == nil {
		kind, plot = "trace", compare.PlotTrace
	}
	for p, name := range res.Names {
		path := filepath.Join(f.Out, fmt.Sprintf("%s_%s_%s.png", kind, ex.Name, name))
		if err := plot(path, res, p, ex.Plot); err != nil {
			return fmt.Errorf("plot %s: %w", path, err)
		}
	}
	return nil
}
