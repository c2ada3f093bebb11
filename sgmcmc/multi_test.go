package sgmcmc_test

import (
	"errors"
	"testing"

	"github.com/pbsgmcmc/pbsgmcmc/sgmcmc"
)

// stateRec is a Resumer whose state is a fixed string.
type stateRec struct{ state, resumed string }

func (r *stateRec) Init(sgmcmc.Info) error               { return nil }
func (r *stateRec) Record(*sgmcmc.Draw) error            { return nil }
func (r *stateRec) Done(*sgmcmc.Result) error            { return nil }
func (r *stateRec) Snapshot() ([]byte, error)            { return []byte(r.state), nil }
func (r *stateRec) Resume(_ sgmcmc.Info, b []byte) error { r.resumed = string(b); return nil }

// TestMultiResume: a Multi recorder resumes its Resumers from a snapshot
// taken with a stateless member (a progress Printer) more or fewer at the
// end, and refuses a snapshot that lacks a Resumer's entry or carries a
// state for a member it does not have.
func TestMultiResume(t *testing.T) {
	snap := func(rs ...sgmcmc.Recorder) []byte {
		b, err := sgmcmc.Multi(rs...).(sgmcmc.Resumer).Snapshot()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	a, b := &stateRec{state: "a"}, &stateRec{state: "bb"}
	with := snap(a, b, &sgmcmc.Printer{})
	without := snap(a, b)
	for name, c := range map[string]struct {
		state []byte
		rs    []sgmcmc.Recorder
		ok    bool
	}{
		"printer added":         {without, []sgmcmc.Recorder{&stateRec{}, &stateRec{}, &sgmcmc.Printer{}}, true},
		"printer dropped":       {with, []sgmcmc.Recorder{&stateRec{}, &stateRec{}}, true},
		"same":                  {with, []sgmcmc.Recorder{&stateRec{}, &stateRec{}, &sgmcmc.Printer{}}, true},
		"resumer missing state": {snap(a), []sgmcmc.Recorder{&stateRec{}, &stateRec{}}, false},
		"state without member":  {without, []sgmcmc.Recorder{&stateRec{}}, false},
	} {
		err := sgmcmc.Multi(c.rs...).(sgmcmc.Resumer).Resume(sgmcmc.Info{}, c.state)
		if c.ok != (err == nil) || err != nil && !errors.Is(err, sgmcmc.ErrCheckpoint) {
			t.Errorf("%s: error %v, want ok %v (ErrCheckpoint otherwise)", name, err, c.ok)
			continue
		}
		if c.ok && (c.rs[0].(*stateRec).resumed != "a" || c.rs[1].(*stateRec).resumed != "bb") {
			t.Errorf("%s: resumed %q, %q; want a, bb", name, c.rs[0].(*stateRec).resumed, c.rs[1].(*stateRec).resumed)
		}
	}
}
