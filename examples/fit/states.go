package main

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"flag"
	"fmt"
	"image/color"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"text/tabwriter"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/pbsgmcmc/pbsgmcmc/examples/internal/report"
	"github.com/pbsgmcmc/pbsgmcmc/pf"
	"github.com/pbsgmcmc/pbsgmcmc/sgmcmc"
	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

// stateOpts holds the latent-state, forecast and model-comparison flags
// and what they computed (-states, -forecast, -holdout, -state-draws).
type stateOpts struct {
	file     string // -states: CSV of the smoothed first state component (msv: of every series')
	forecast int    // -forecast: horizon H
	holdout  int    // -holdout: rows of sequence 0 held out of the fit and scored
	draws    int    // -state-draws: posterior draws D

	states *sgmcmc.StateSummary
	fc     *sgmcmc.ForecastSummary
	held   ssm.Sequence
	score  *sgmcmc.Score
	llMean float64 // log-likelihood of the fitted rows at the posterior mean
	llSE   float64
}

func (o *stateOpts) register(fs *flag.FlagSet) {
	fs.StringVar(&o.file, "states", "", "write CSV t,mean,sd,q05,q50,q95 of the posterior-integrated smoothed first state component (t = 0..T, SVM: log-volatility x_t) of the first sequence to this file, and states.png (data with the smoothed volatility band) to -out; msv: the columns NAME_mean,NAME_sd,NAME_q05,NAME_q50,NAME_q95 for each series' log-volatility, and states1.png, states2.png, … (states.png for one series)")
	fs.IntVar(&o.forecast, "forecast", 0, "print (and with -json report) the H-step-ahead posterior predictive forecast of the volatility (of x and y for lgssm; of each series' log-volatility x and return y for msv)")
	fs.IntVar(&o.holdout, "holdout", 0, "fit all but the last H rows of the first sequence and report their log predictive score (log of the posterior-mean predictive density, by particle filter or Kalman) and the log-likelihood at the posterior mean: compare models on the same data")
	fs.IntVar(&o.draws, "state-draws", 200, "posterior draws integrated over by -states, -forecast and -holdout")
}

// split removes the last -holdout rows of the first sequence from the
// data to fit, keeping them for the predictive score.
func (o *stateOpts) split(data ssm.Dataset) (ssm.Dataset, error) {
	if o.holdout == 0 {
		return data, nil
	}
	seq := data.Sequences[0]
	T, H := seq.Len(), o.holdout
	if H < 0 {
		return data, fmt.Errorf("-holdout = %d: the number of held-out rows must be positive (0: none)", H)
	}
	if H > T-10 {
		return data, fmt.Errorf("-holdout = %d: it must leave at least 10 of the %d rows of the first sequence to fit", H, T)
	}
	o.held = ssm.Sequence{Obs: seq.Obs, Y: seq.Y[(T-H)*seq.Obs:]}
	out := data
	out.Sequences = append([]ssm.Sequence{{Obs: seq.Obs, Y: seq.Y[:(T-H)*seq.Obs]}}, data.Sequences[1:]...)
	return out, nil
}

func (o *stateOpts) settings(c *config) sgmcmc.StateSettings {
	return sgmcmc.StateSettings{Draws: o.draws, PF: pf.StateSettings{Proposal: c.set.Proposal}, Seed: c.set.Seed, Workers: c.set.Workers}
}

// compute runs the state and forecast computations the flags ask for and
// writes the CSV and PNG.
func (o *stateOpts) compute(ctx context.Context, c *config, data ssm.Dataset, post *sgmcmc.Posterior, stderr io.Writer) error {
	if o.file == "" && o.forecast == 0 && o.holdout == 0 {
		return nil
	}
	if o.forecast < 0 || o.draws < 1 {
		return fmt.Errorf("-forecast = %d and -state-draws = %d: the horizon must not be negative and the draws at least 1", o.forecast, o.draws)
	}
	s := o.settings(c)
	if o.file != "" {
		if !c.quiet {
			fmt.Fprintf(stderr, "fit: smoothed states of sequence 0 over %d posterior draws\n", min(o.draws, post.Draws()))
		}
		st, err := post.States(ctx, s)
		if err != nil {
			return err
		}
		o.states = st
		if err := writeStates(o.file, c, data.Sequences[0], st); err != nil {
			return err
		}
	}
	if o.forecast > 0 {
		fc, err := post.Forecast(ctx, o.forecast, s)
		if err != nil {
			return err
		}
		o.fc = fc
	}
	if o.holdout > 0 {
		sc, err := post.PredictiveScore(ctx, o.held, s)
		if err != nil {
			return err
		}
		o.score = sc
		u, err := post.MeanU()
		if err != nil {
			return err
		}
		if o.llMean, o.llSE, err = post.LogLik(ctx, u, s); err != nil {
			return err
		}
	}
	return nil
}

// holdoutJSON is the "holdout" member of the -json output.
type holdoutJSON struct {
	Rows      int             `json:"rows"`
	LogScore  json.RawMessage `json:"log_score"`
	SE        json.RawMessage `json:"log_score_se"`
	ESS       json.RawMessage `json:"ess"`
	Pointwise json.RawMessage `json:"pointwise"`
	LogLik    json.RawMessage `json:"loglik_at_mean"`
	LogLikSE  json.RawMessage `json:"loglik_se"`
	Draws     int             `json:"draws"`
}

func (o *stateOpts) holdoutJSON() *holdoutJSON {
	if o == nil || o.score == nil {
		return nil
	}
	f := func(v float64) json.RawMessage { return json.RawMessage(report.JSONFloat(v)) }
	sc := o.score
	return &holdoutJSON{Rows: o.held.Len(), LogScore: f(sc.LogScore), SE: f(sc.SE), ESS: f(sc.ESS), Pointwise: f(sc.Pointwise),
		LogLik: f(o.llMean), LogLikSE: f(o.llSE), Draws: sc.Draws}
}

// writeStates writes the -states CSV and the states plots: for -model
// msv one column group and one plot per series (msvStatesFiles), else the
// first state component (writeStatesCSV, states.png).
func writeStates(path string, c *config, seq ssm.Sequence, st *sgmcmc.StateSummary) error {
	if c.model != "msv" {
		if err := writeStatesCSV(path, st); err != nil {
			return err
		}
		return statesPNG(filepath.Join(c.out, "states.png"), c.model, seq, st)
	}
	if len(st.Smoothed) != seq.Obs || len(c.series) != seq.Obs {
		return fmt.Errorf("-states: %d smoothed state components for %d series", len(st.Smoothed), seq.Obs)
	}
	if err := writeStatesCSVWide(path, st, c.series); err != nil {
		return err
	}
	for i, name := range c.series {
		file := "states.png"
		if seq.Obs > 1 {
			file = fmt.Sprintf("states%d.png", i+1)
		}
		one := *st
		one.Smoothed = st.Smoothed[i : i+1]
		y := ssm.Sequence{Obs: 1, Y: make([]float64, seq.Len())}
		for t := range y.Y {
			y.Y[t] = seq.At(t)[i]
		}
		if err := statesPNG(filepath.Join(c.out, file), fmt.Sprintf("msv, series %d (%s)", i+1, name), y, &one); err != nil {
			return err
		}
	}
	return nil
}

// writeStatesCSVWide writes t and, for each state component j, the
// columns NAME_mean, NAME_sd, NAME_q05, NAME_q50, NAME_q95 with NAME =
// names[j].
func writeStatesCSVWide(path string, st *sgmcmc.StateSummary, names []string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := csv.NewWriter(f)
	head := []string{"t"}
	for _, n := range names {
		head = append(head, n+"_mean", n+"_sd", n+"_q05", n+"_q50", n+"_q95")
	}
	w.Write(head)
	g := func(v float64) string { return strconv.FormatFloat(v, 'g', 8, 64) }
	row := make([]string, len(head))
	for i := range st.Len() {
		row[0] = strconv.Itoa(st.First + i)
		for j := range names {
			b := &st.Smoothed[j]
			copy(row[1+5*j:], []string{g(b.Mean[i]), g(b.SD[i]), g(b.Q05[i]), g(b.Q50[i]), g(b.Q95[i])})
		}
		w.Write(row)
	}
	w.Flush()
	if err := w.Error(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// writeStatesCSV writes t,mean,sd,q05,q50,q95 of the first summarised
// state component.
func writeStatesCSV(path string, st *sgmcmc.StateSummary) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := csv.NewWriter(f)
	w.Write([]string{"t", "mean", "sd", "q05", "q50", "q95"})
	b := st.Smoothed[0]
	g := func(v float64) string { return strconv.FormatFloat(v, 'g', 8, 64) }
	for i := range b.Mean {
		w.Write([]string{strconv.Itoa(st.First + i), g(b.Mean[i]), g(b.SD[i]), g(b.Q05[i]), g(b.Q50[i]), g(b.Q95[i])})
	}
	w.Flush()
	if err := w.Error(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// bandRows returns the printed rows of a forecast band.
type fcRow struct {
	H    int             `json:"h"`
	Mean json.RawMessage `json:"mean"`
	SD   json.RawMessage `json:"sd"`
	Q05  json.RawMessage `json:"q05"`
	Q50  json.RawMessage `json:"q50"`
	Q95  json.RawMessage `json:"q95"`
}

func fcRows(b *sgmcmc.Band) []fcRow {
	if b == nil {
		return nil
	}
	f := func(v float64) json.RawMessage { return json.RawMessage(report.JSONFloat(v)) }
	rows := make([]fcRow, b.Len())
	for i := range rows {
		rows[i] = fcRow{i + 1, f(b.Mean[i]), f(b.SD[i]), f(b.Q05[i]), f(b.Q50[i]), f(b.Q95[i])}
	}
	return rows
}

// forecastJSON is the "forecast" member of the -json output.
type forecastJSON struct {
	Horizon    int     `json:"horizon"`
	Origin     int     `json:"origin"`
	Draws      int     `json:"draws"`
	Paths      int     `json:"paths"`
	Volatility []fcRow `json:"volatility"`
	State      []fcRow `json:"state,omitempty"`
	Obs        []fcRow `json:"obs,omitempty"`
	// Series (msv) holds the forecast of each series' log-volatility and
	// return, in place of state and obs.
	Series []seriesFC `json:"series,omitempty"`
}

// seriesFC is the forecast of one series of -model msv.
type seriesFC struct {
	Name  string  `json:"name"`
	State []fcRow `json:"state"`
	Obs   []fcRow `json:"obs"`
}

// forecastJSON returns the "forecast" member; series names the series of
// -model msv (nil for the univariate models).
func (o *stateOpts) forecastJSON(series []string) *forecastJSON {
	if o == nil || o.fc == nil {
		return nil
	}
	fc := o.fc
	out := &forecastJSON{Horizon: fc.Horizon, Origin: fc.Origin, Draws: fc.Draws, Paths: fc.Paths, Volatility: fcRows(fc.Volatility)}
	if series == nil {
		out.State, out.Obs = fcRows(&fc.States[0]), fcRows(&fc.Obs[0])
		return out
	}
	for i, name := range series {
		out.Series = append(out.Series, seriesFC{Name: name, State: fcRows(&fc.States[i]), Obs: fcRows(&fc.Obs[i])})
	}
	return out
}

// writeText prints the forecast table (volatility models: the
// volatility; otherwise the state and the observation; for -model msv,
// series names its series: the log-volatility and the return of each).
func (o *stateOpts) writeText(w io.Writer, series []string) error {
	if o.states != nil {
		fmt.Fprintf(w, "smoothed states (%d posterior draws", o.states.Draws)
		if o.states.Exact {
			fmt.Fprint(w, ", exact Kalman/RTS")
		} else {
			fmt.Fprintf(w, " × %d paths, %v", o.states.Paths, o.states.Method)
		}
		fmt.Fprintf(w, ") written to %s\n", o.file)
	}
	if sc := o.score; sc != nil {
		fmt.Fprintf(w, "held-out last %d rows: log predictive score %.3f (SE %.3f over %d posterior draws, ESS %.0f), pointwise %.3f\n",
			o.held.Len(), sc.LogScore, sc.SE, sc.Draws, sc.ESS, sc.Pointwise)
		fmt.Fprintf(w, "log-likelihood of the fitted rows at the posterior mean: %.3f (SE %.3f)\n", o.llMean, o.llSE)
	}
	if o.fc == nil {
		return nil
	}
	fc := o.fc
	type table struct {
		name string
		b    *sgmcmc.Band
	}
	tables := []table{{"volatility", fc.Volatility}}
	switch {
	case series != nil:
		tables = tables[:0]
		for i, name := range series {
			tables = append(tables, table{fmt.Sprintf("x%d (log-volatility of %s)", i+1, name), &fc.States[i]}, table{fmt.Sprintf("y%d (%s)", i+1, name), &fc.Obs[i]})
		}
	case fc.Volatility == nil:
		tables = []table{{"x", &fc.States[0]}, {"y", &fc.Obs[0]}}
	}
	for _, tb := range tables {
		fmt.Fprintf(w, "\n%s forecast after t = %d (posterior predictive, %d draws × %d paths):\n", tb.name, fc.Origin, fc.Draws, fc.Paths)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "h\tmean\tsd\tq05\tq50\tq95\t")
		for i := range tb.b.Mean {
			fmt.Fprintf(tw, "%d\t%.4g\t%.3g\t%.4g\t%.4g\t%.4g\t\n", i+1, tb.b.Mean[i], tb.b.SD[i], tb.b.Q05[i], tb.b.Q50[i], tb.b.Q95[i])
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return nil
}

// statesPNG draws the first sequence with its smoothed band. For
// volatility models (st.SmoothedVol set): |y_t| in grey and the smoothed
// volatility (posterior mean line, 5–95% band shaded), both in the units
// of y; otherwise y_t with the smoothed first state x_t. The title and the
// legend sit above the panel, outside the data.
func statesPNG(path, model string, seq ssm.Sequence, st *sgmcmc.StateSummary) error {
	p := plot.New()
	p.X.Label.Text = "t"
	p.X.Tick.Marker = report.Ticks{}
	p.Y.Tick.Marker = report.Ticks{}
	band, name, dataName := &st.Smoothed[0], "smoothed x_t", "y_t (data)"
	vol := st.SmoothedVol != nil
	if vol {
		band, name, dataName = st.SmoothedVol, "smoothed volatility", "|y_t| (data)"
		p.Y.Label.Text = "|y_t| and volatility"
	} else {
		p.Y.Label.Text = "y_t and x_t"
	}
	data := make(plotter.XYs, 0, seq.Len())
	for t := range seq.Len() {
		y := seq.At(t)[0]
		if math.IsNaN(y) {
			continue
		}
		if vol {
			y = math.Abs(y)
		}
		data = append(data, plotter.XY{X: float64(t + 1), Y: y})
	}
	dl, err := plotter.NewLine(data)
	if err != nil {
		return fmt.Errorf("states plot: %w", err)
	}
	dl.Color = color.Gray{Y: 140}
	dl.Width = vg.Points(0.4)
	poly := make(plotter.XYs, 0, 2*band.Len())
	for i := range band.Len() {
		poly = append(poly, plotter.XY{X: float64(st.First + i), Y: band.Q05[i]})
	}
	for i := band.Len() - 1; i >= 0; i-- {
		poly = append(poly, plotter.XY{X: float64(st.First + i), Y: band.Q95[i]})
	}
	pg, err := plotter.NewPolygon(poly)
	if err != nil {
		return fmt.Errorf("states plot: %w", err)
	}
	pg.Color = color.NRGBA{R: 230, G: 120, B: 60, A: 130}
	pg.LineStyle.Width = 0
	pg.LineStyle.Color = color.Transparent
	mean := make(plotter.XYs, band.Len())
	for i := range mean {
		mean[i] = plotter.XY{X: float64(st.First + i), Y: band.Mean[i]}
	}
	ml, err := plotter.NewLine(mean)
	if err != nil {
		return fmt.Errorf("states plot: %w", err)
	}
	ml.Color = color.RGBA{R: 190, G: 50, B: 20, A: 255}
	ml.Width = vg.Points(0.9)
	p.Add(dl, pg, ml)
	if vol {
		p.Y.Min = 0
	}
	f := report.Figure{
		Title: fmt.Sprintf("%s: %s, posterior mean and 5–95%% band over %d posterior draws", model, name, st.Draws),
		Legend: []report.LegendEntry{
			{Label: dataName, Thumbs: []plot.Thumbnailer{dl}},
			{Label: name + ", posterior mean", Thumbs: []plot.Thumbnailer{ml}},
			{Label: "5–95% band", Thumbs: []plot.Thumbnailer{pg}},
		},
		Panels: [][]*plot.Plot{{p}},
		Width:  10 * vg.Inch, Height: 4.3 * vg.Inch,
	}
	return f.Save(path)
}
