package sgmcmc

import (
	"errors"
	"strings"
	"testing"

	"github.com/pbsgmcmc/pbsgmcmc/pf"
)

// runaway needs runawayRounds unconverged rounds in a row that widen the
// grid's range by runawayWiden, the last step at least runawaySteps sds.
func TestRunaway(t *testing.T) {
	g := func(h float64) pf.Grid { return pf.Grid{Lo: -h, Hi: h, Nodes: 100} }
	type round struct {
		conv       bool
		last       float64
		before, to float64 // half-ranges of the grid before and after the regrid
	}
	for _, c := range []struct {
		name   string
		rounds []round
		want   bool
	}{
		{"SVM, 20% zeros of DAX", []round{{false, 0.84, 8.7, 9.64}, {false, 7.29, 9.64, 18.3}, {false, 24.3, 18.3, 34.7}}, true},
		{"SVM, 15% zeros of DAX", []round{{false, 5.41, 9.04, 17}, {false, 14.2, 17, 28.8}, {false, 30, 28.8, 62}}, true},
		{"one widening round", []round{{false, 30, 9, 40}}, false},
		{"a converged round breaks the streak", []round{{false, 12, 9, 18}, {true, 0.3, 18, 36}}, false},
		{"a narrow regrid breaks the streak", []round{{false, 12, 9, 18}, {false, 12, 18, 20}, {false, 12, 20, 40}}, false},
		{"small last step", []round{{false, 8, 9, 18}, {false, 9.9, 18, 36}}, false},
		{"last step 10 sds", []round{{false, 8, 9, 18}, {false, 10, 18, 36}}, true},
		{"runawayRounds rounds, the last runawaySteps, each widening runawayWiden", []round{{false, 8, 9, 9 * runawayWiden}, {false, runawaySteps, 9 * runawayWiden, 9 * runawayWiden * runawayWiden}}, true},
		{"widening just short of runawayWiden", []round{{false, 12, 9, 18}, {false, 12, 18, 18*runawayWiden - 0.01}}, false},
	} {
		var r runaway
		for _, rd := range c.rounds {
			r.add(rd.conv, rd.last, g(rd.before), g(rd.to))
		}
		err := r.check([]string{"zeros"})
		if got := err != nil; got != c.want {
			t.Errorf("%s: error %v, want one: %v (runawayRounds %d)", c.name, err, c.want, runawayRounds)
		}
		if err != nil && (!errors.Is(err, ErrNoMode) || !strings.HasSuffix(err.Error(), "; the data warn: zeros")) {
			t.Errorf("%s: error %q: want ErrNoMode ending with the data's warnings", c.name, err)
		}
	}
}
