package sgmcmc

import "testing"

// TestCheckpointEvery checks the iterations between a checkpointed Fit's
// checkpoints against checkpointPeriod (20 s) by hand: the planned
// gradient's cost per iteration, the waves in which the workers run the
// chains, at least 1 and Run's default (0) from 1000 on.
func TestCheckpointEvery(t *testing.T) {
	for _, c := range []struct {
		name            string
		g               Gradient
		plain, cv, full float64 // seconds per gradient
		chains, workers int
		want            int
	}{
		{"GARCH S&P 500, full-data scores, 4 chains on 2 workers", FullGradient, 0.005, 0.015, 0.9, 4, 2, 11}, // 20/(2·0.9)
		{"the same on 4 workers", FullGradient, 0.005, 0.015, 0.9, 4, 4, 22},
		{"3 chains on 2 workers: two waves", FullGradient, 0.005, 0.015, 0.9, 3, 2, 11},
		{"control variate", ControlVariateGradient, 0.004, 0.012, 0, 4, 2, 833}, // 20/(2·0.012)
		{"plain", PlainGradient, 0.05, 0.15, 0, 4, 2, 200},
		{"a full pass slower than the period", FullGradient, 1, 3, 30, 4, 2, 1},
		{"cheap: Run's default", ControlVariateGradient, 1e-4, 3e-4, 0, 4, 2, 0},
		{"no cost measured: Run's default", FullGradient, 0, 0, 0, 4, 2, 0},
	} {
		f := &fit{prep: Preparation{Gradient: c.g, CostPlain: c.plain, CostCV: c.cv, CostFull: c.full}}
		f.s.Chains, f.s.Workers = c.chains, c.workers
		if got := f.checkpointEvery(); got != c.want {
			t.Errorf("%s: every %d iterations, want %d (checkpointPeriod %v)", c.name, got, c.want, checkpointPeriod)
		}
	}
}
