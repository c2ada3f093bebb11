package paper

import (
	"fmt"

	"github.com/pbsgmcmc/pbsgmcmc/examples/internal/compare"
	"github.com/pbsgmcmc/pbsgmcmc/gradient"
	"github.com/pbsgmcmc/pbsgmcmc/pf"
	"github.com/pbsgmcmc/pbsgmcmc/sgmcmc"
	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

// Gradient is one of the gradient estimators of the paper's tables.
type Gradient int

const (
	// Full is the full-data gradient: every sequence, whole (S = T).
	Full Gradient = iota
	// Weekly is one random sequence of the data set, whole: the paper's
	// weekly segments of exchange-rate returns.
	Weekly
	// NoBuffer is a random subsequence of length S without buffer.
	NoBuffer
	// Buffer is a random subsequence of length S with buffers of length B.
	Buffer
)

// String returns the gradient's name in the paper's tables.
func (g Gradient) String() string {
	return [...]string{"Full", "Weekly", "No Buffer", "Buffer"}[g]
}

// Estimators are the gradient estimators of one experiment: on Model and
// Data, with particle filters set by PF or, with Exact, the model's exact
// (Kalman) scorer; S and B are the subsequence and buffer lengths.
type Estimators struct {
	Model ssm.Model
	Data  ssm.Dataset
	PF    pf.Settings
	Exact bool
	S, B  int
}

// Full returns the full-data gradient estimator (compare.FullGradient).
func (e Estimators) Full() (sgmcmc.Estimator, error) {
	return compare.FullGradient(e.Model, e.Data, e.PF, e.Exact)
}

// Method returns the method of gradient g, labelled name.
func (e Estimators) Method(g Gradient, name string) compare.Method {
	if g == Full {
		return compare.Method{Name: name, New: func(int) (sgmcmc.Estimator, error) { return e.Full() }}
	}
	set := gradient.Settings{PF: e.PF, Exact: e.Exact}
	switch g {
	case Weekly:
		set.Sampling = gradient.Full
	case NoBuffer:
		set.S = e.S
	case Buffer:
		set.S, set.B = e.S, e.B
	}
	return compare.Method{Name: name, New: func(int) (sgmcmc.Estimator, error) { return gradient.New(e.Model, e.Data, set) }}
}

// Methods returns the methods of gs, each labelled by its name.
func (e Estimators) Methods(gs ...Gradient) []compare.Method {
	out := make([]compare.Method, len(gs))
	for i, g := range gs {
		out[i] = e.Method(g, g.String())
	}
	return out
}

// Filtered returns the methods of gradient g, one per entry of filters in
// order: "pf" gives e's particle filter, labelled "<g> N=<e.PF.N>", and
// "kf" the model's exact scorer, labelled "<g> N=inf" (the rows of the
// paper's LGSSM tables).
func (e Estimators) Filtered(g Gradient, filters ...string) []compare.Method {
	out := make([]compare.Method, len(filters))
	for i, f := range filters {
		e.Exact = f == "kf"
		label := fmt.Sprintf("%s N=%d", g, e.PF.N)
		if e.Exact {
			label = g.String() + " N=inf"
		}
		out[i] = e.Method(g, label)
	}
	return out
}
