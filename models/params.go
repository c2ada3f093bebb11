package models

import (
	"fmt"
	"math"

	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

// Params is the parameter half of a model: the names of the natural
// parameters θ, one [Transform] per coordinate (θ_i = v_i(u_i)) and an
// independent prior, one [Marginal] per coordinate. A model embeds it to
// get the [ssm.Model] methods ParamNames, Constrain, Unconstrain and
// LogPrior (so the model is an [ssm.Prior]); it then writes only Dims and
// Bind. The prior pushed forward to u is
//
//	log π(u) = Σ_i [log p_i(v_i(u_i)) + log|dv_i/du_i|],
//
// exactly [Independent]{Transforms, Prior}. For example, an AR(1) family
// with θ = (φ, σ, τ), u = (atanh φ, log σ, log τ), (φ+1)/2 ~ Beta(5, 1.5)
// and σ², τ² ~ InvGamma(2, 0.5) is
//
//	models.Params{
//		Names:      []string{"phi", "sigma", "tau"},
//		Transforms: []models.Transform{models.Symmetric, models.Positive, models.Positive},
//		Prior:      []models.Marginal{models.Beta{A: 5, B: 1.5, Lo: -1, Hi: 1}, models.InvGammaSq{A: 2, B: 0.5}, models.InvGammaSq{A: 2, B: 0.5}},
//	}
//
// A Params is read-only once in use; [Params.Clone] gives a copy whose
// prior can be changed. Slices of the wrong length are programmer errors
// and panic; invalid values give a *[ssm.ParamError].
type Params struct {
	Names      []string    // names of the natural parameters, in order
	Transforms []Transform // θ_i = Transforms[i] applied to u_i
	Prior      []Marginal  // prior of θ_i; nil means none (LogPrior 0 plus the Jacobian)
}

var _ ssm.Prior = Params{}

// Len returns the number of parameters, len(p.Names).
func (p Params) Len() int { return len(p.Names) }

// Clone returns a copy that shares no slices with p.
func (p Params) Clone() Params {
	return Params{
		Names:      append([]string(nil), p.Names...),
		Transforms: append([]Transform(nil), p.Transforms...),
		Prior:      append([]Marginal(nil), p.Prior...),
	}
}

// Independent returns the prior as an [Independent] (sharing p's slices).
func (p Params) Independent() Independent {
	return Independent{Transforms: p.Transforms, Marginals: p.Prior}
}

// ParamNames implements [ssm.Model]: a copy of p.Names.
func (p Params) ParamNames() []string { return append([]string(nil), p.Names...) }

// LogPrior implements [ssm.Prior] with the push-forward above; with a nil
// Prior it is the log-Jacobian Σ_i log|dv_i/du_i| alone (a flat prior on θ).
func (p Params) LogPrior(grad, u []float64) float64 {
	if p.Prior == nil {
		p.check("LogPrior", u, u)
		total := 0.0
		for i, tr := range p.Transforms {
			_, _, logJ, dlogJ := tr.Forward(u[i])
			total += logJ
			if grad != nil {
				grad[i] = dlogJ
			}
		}
		return total
	}
	return p.Independent().LogPrior(grad, u)
}

// Constrain implements [ssm.Model]: θ_i = v_i(u_i), returning
// log|det ∂θ/∂u| = Σ_i log|dv_i/du_i|.
func (p Params) Constrain(theta, u []float64) float64 {
	p.check("Constrain", theta, u)
	logJ := 0.0
	for i, tr := range p.Transforms {
		v, _, lj, _ := tr.Forward(u[i])
		theta[i] = v
		logJ += lj
	}
	return logJ
}

// Unconstrain implements [ssm.Model]: u_i = v_i⁻¹(θ_i), or a
// *[ssm.ParamError] naming the first θ_i outside (Lo, Hi) or NaN.
func (p Params) Unconstrain(u, theta []float64) error {
	p.check("Unconstrain", u, theta)
	for i, tr := range p.Transforms {
		v, ok := tr.Inverse(theta[i])
		if !ok {
			return &ssm.ParamError{Name: p.Names[i], Value: theta[i], Reason: fmt.Sprintf("must lie in (%v, %v)", tr.Lo, tr.Hi)}
		}
		u[i] = v
	}
	return nil
}

// FromNatural returns u for the natural parameters theta (one per name),
// or the *[ssm.ParamError] of Unconstrain.
func (p Params) FromNatural(theta ...float64) ([]float64, error) {
	if len(theta) != p.Len() {
		return nil, fmt.Errorf("models: %d natural parameters given, want %d (%v)", len(theta), p.Len(), p.Names)
	}
	u := make([]float64, p.Len())
	if err := p.Unconstrain(u, theta); err != nil {
		return nil, err
	}
	return u, nil
}

// Natural is Constrain for Bind: it writes θ(u) into theta and, when dtheta
// is non-nil, dθ_i/du_i into dtheta, and returns a *[ssm.ParamError]
// naming the first coordinate whose u_i is NaN or whose θ_i saturates onto
// the boundary of (Lo, Hi) or overflows (|u_i| of a few tens or hundreds),
// so that a kernel never sees a parameter outside its support.
func (p Params) Natural(theta, dtheta, u []float64) error {
	p.check("Natural", theta, u)
	for i, tr := range p.Transforms {
		if math.IsNaN(u[i]) {
			return &ssm.ParamError{Name: p.Names[i], Value: math.NaN(), Reason: fmt.Sprintf("u[%d] is NaN", i)}
		}
		v, dv, _, _ := tr.Forward(u[i])
		if !(v > tr.Lo && v < tr.Hi) || !(dv > 0) {
			return &ssm.ParamError{Name: p.Names[i], Value: v, Reason: fmt.Sprintf("must lie strictly inside (%v, %v) (u[%d] = %v)", tr.Lo, tr.Hi, i, u[i])}
		}
		theta[i] = v
		if dtheta != nil {
			dtheta[i] = dv
		}
	}
	return nil
}

func (p Params) check(method string, a, b []float64) {
	n := len(p.Names)
	if len(p.Transforms) != n || (p.Prior != nil && len(p.Prior) != n) {
		panic(fmt.Sprintf("models: Params.%s: %d names, %d transforms, %d marginals", method, n, len(p.Transforms), len(p.Prior)))
	}
	if len(a) != n || len(b) != n {
		panic(fmt.Sprintf("models: Params.%s: slice lengths %d and %d, want %d", method, len(a), len(b), n))
	}
}
