package sgmcmc

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"reflect"
	"strings"

	"github.com/pbsgmcmc/pbsgmcmc/sgmcmc/internal/surrogate"
	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

// prepFormat names the layout of prepFile; a file of another is refused.
const prepFormat = "pbsgmcmc/sgmcmc preparation v3"

// prepFile is Checkpoint+".prep": the preparation (with the state that
// Preparation does not report: the surrogate, the importance-sampling
// points) and the sampling's saved segments, for the fit whose
// fingerprint it carries.
type prepFile struct {
	Format      string
	Fingerprint string
	Prep        Preparation
	// The preparation's state that it does not report.
	Proposal  []proposalComponent  `json:",omitempty"`
	Jacobian  []float64            `json:",omitempty"`
	Starts    [][]float64          `json:",omitempty"`
	Surrogate *surrogate.Surrogate `json:",omitempty"`
	// Discretisation is the correction towards a finer scorer.
	Discretisation *discretisation `json:",omitempty"`
	Sampling       *ckSampling     `json:",omitempty"`
	IS             *ckIS           `json:",omitempty"`
}

// savePreparation writes the preparation next to the checkpoint, so that a
// resumed fit samples with exactly the same anchor, preconditioner and step.
func (f *fit) savePreparation() error {
	b, err := json.Marshal(prepFile{Format: prepFormat, Fingerprint: f.fingerprint(), Prep: f.prep,
		Proposal: f.prep.proposal, Jacobian: f.prep.jacobian, Starts: f.prep.starts, Surrogate: f.prep.sur, Discretisation: f.prep.dc, Sampling: f.ck, IS: f.ckIS()})
	if err != nil {
		return err
	}
	// Sealed with a checksum (ckfile.go), written atomically.
	if err := atomicWrite(f.s.Checkpoint+".prep", seal(b)); err != nil {
		return fmt.Errorf("%w: %w", ErrCheckpoint, err)
	}
	return nil
}

// loadPreparation reads a saved preparation; false when there is none.
func (f *fit) loadPreparation() (bool, error) {
	b, err := os.ReadFile(f.s.Checkpoint + ".prep")
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	var saved prepFile
	body, why := unseal(b)
	if why != "" {
		return false, damaged(f.s.Checkpoint+".prep", f.s.Checkpoint, why)
	}
	if err := json.Unmarshal(body, &saved); err != nil {
		return false, damaged(f.s.Checkpoint+".prep", f.s.Checkpoint, err.Error())
	}
	if saved.Format != prepFormat {
		return false, fmt.Errorf("%w: %s.prep is not a preparation of this version (format %q, want %q): %s", ErrCheckpoint, f.s.Checkpoint, saved.Format, prepFormat, cure(f.s.Checkpoint+".prep", f.s.Checkpoint))
	}
	if fp := f.fingerprint(); saved.Fingerprint != fp {
		return false, fmt.Errorf("%w: %s.prep was written by a fit with other data or settings (remove it and %s for a fresh run)",
			ErrCheckpoint, f.s.Checkpoint, f.s.Checkpoint)
	}
	p := f.dim
	saved.Surrogate.Bind(f.surBase())
	if len(saved.Prep.Mode) != p || len(saved.Prep.Chol) != p*p || len(saved.Prep.Anchor) != p ||
		len(saved.Prep.NoisePlain) != p*p || len(saved.Prep.NoiseCV) != p*p || !saved.Discretisation.valid(p) ||
		saved.Surrogate != nil && !saved.Surrogate.Valid(p) || !saved.stateValid(p, f.s.Chains) {
		return false, fmt.Errorf("%w: %s.prep has the wrong dimensions", ErrCheckpoint, f.s.Checkpoint)
	}
	f.prep = saved.Prep
	f.prep.proposal, f.prep.jacobian, f.prep.starts = saved.Proposal, saved.Jacobian, saved.Starts
	f.prep.sur, f.prep.dc = saved.Surrogate, saved.Discretisation
	f.ck = saved.Sampling
	if is := saved.IS; is != nil {
		if len(is.LPs) != len(is.Xs) || len(is.LW) != len(is.Xs) {
			return false, damaged(f.s.Checkpoint+".prep", f.s.Checkpoint, "its importance-sampling points have the wrong dimensions")
		}
		for _, x := range is.Xs {
			if len(x) != p {
				return false, damaged(f.s.Checkpoint+".prep", f.s.Checkpoint, "its importance-sampling points have the wrong dimensions")
			}
		}
		f.isPts.xs, f.isPts.lps, f.isPts.lw = is.Xs, is.LPs, is.LW
	}
	if dc := f.prep.dc; dc != nil && dc.Coarse {
		coarse := f.model
		for range max(1, dc.Level) {
			cs, ok := coarse.(ssm.Coarsener)
			if ok {
				coarse, ok = cs.Coarsen()
			}
			if !ok {
				return false, fmt.Errorf("%w: %s.prep samples a coarser discretisation that the model does not offer", ErrCheckpoint, f.s.Checkpoint)
			}
		}
		f.model = coarse
	}
	if f.prep.Grid.Nodes > 0 {
		if err := f.prep.Grid.Validate(); err != nil {
			return false, fmt.Errorf("%w: %s.prep: %v", ErrCheckpoint, f.s.Checkpoint, err)
		}
		f.setGrid(f.prep.Grid)
	}
	if f.prep.Exact {
		f.setExact(true)
	}
	return true, nil
}

// modelKey identifies a model for the fingerprint: its type, and its
// settings (GARCH's Points, Nodes and Refine, a prior given by value or
// by pointer) when
// they print the same in every process: pointers are followed, and a
// function, map or channel inside leaves the type alone. (Pointers used
// to leave the type alone too: a resumed fit with another prior passed by
// pointer reused the checkpoint.)
func modelKey(m ssm.Model) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%T", m)
	if !writeKey(&b, reflect.ValueOf(m), 0) {
		return fmt.Sprintf("%T", m)
	}
	return b.String()
}

// writeKey writes v to b, following pointers (to a depth of 32), and
// reports false when v holds something that does not print the same in
// every process (functions, maps, channels, unsafe pointers, cycles).
func writeKey(b *strings.Builder, v reflect.Value, depth int) bool {
	if depth > 32 {
		return false
	}
	switch v.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128, reflect.String:
		fmt.Fprintf(b, "%v", v)
		return true
	case reflect.Array, reflect.Slice:
		b.WriteByte('[')
		for i := range v.Len() {
			if i > 0 {
				b.WriteByte(' ')
			}
			if !writeKey(b, v.Index(i), depth+1) {
				return false
			}
		}
		b.WriteByte(']')
		return true
	case reflect.Struct:
		b.WriteByte('{')
		for i := range v.NumField() {
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(v.Type().Field(i).Name + ":")
			if !writeKey(b, v.Field(i), depth+1) {
				return false
			}
		}
		b.WriteByte('}')
		return true
	case reflect.Interface, reflect.Pointer:
		if v.IsNil() {
			b.WriteString("nil")
			return true
		}
		if v.Kind() == reflect.Pointer {
			b.WriteByte('&')
		} else {
			fmt.Fprintf(b, "%v", v.Elem().Type())
		}
		return writeKey(b, v.Elem(), depth+1)
	}
	return false
}

// fingerprint identifies everything that determines the preparation.
func (f *fit) fingerprint() string {
	h := uint64(14695981039346656037)
	add := func(v uint64) {
		for i := 0; i < 8; i++ {
			h ^= v & 0xff
			h *= 1099511628211
			v >>= 8
		}
	}
	for _, seq := range f.data.Sequences {
		add(uint64(len(seq.Y)))
		for _, y := range seq.Y {
			add(math.Float64bits(y))
		}
	}
	s := f.s
	return fmt.Sprintf("%s|%x|S%d B%d N%d NC%d NA%d P%d E%v F%d G%d W%d A%d K%d AW%d h%v seed%d chains%d thin%d init%v prep%d lp%d",
		modelKey(f.user), h, s.S, s.B, s.N, s.CVParticles, s.AnchorParticles, s.Proposal, s.Exact, s.Filter, s.Gradient, s.WarmUp, s.AnchorPasses, s.NoiseProbes,
		s.AdaptWindow, s.StepSize, s.Seed, s.Chains, s.Thin, s.Init, s.PrepObs, s.LaplacePaths)
}

// stateValid reports whether the saved proposal, Jacobian and chains'
// starts fit p parameters and the given chains (each may be absent).
func (pf *prepFile) stateValid(p, chains int) bool {
	for _, c := range pf.Proposal {
		if len(c.Center) != p || len(c.Chol) != p*p || !(c.Weight > 0) {
			return false
		}
	}
	if pf.Jacobian != nil && len(pf.Jacobian) != p*p || pf.Starts != nil && len(pf.Starts) != chains {
		return false
	}
	for _, u := range pf.Starts {
		if len(u) != p {
			return false
		}
	}
	return true
}
