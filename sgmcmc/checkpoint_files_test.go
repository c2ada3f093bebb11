package sgmcmc_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pbsgmcmc/pbsgmcmc/models"
	"github.com/pbsgmcmc/pbsgmcmc/sgmcmc"
)

// One flipped byte in any file of a checkpoint (the checkpoint, its .prep
// and its .draws) is refused at resume with an ErrCheckpoint that names
// the file and the cure, instead of resuming from wrong numbers (a
// flipped digit in .prep or a flipped byte of a draw in .draws used to
// pass unnoticed); an undamaged copy resumes to the same draws.
func TestCheckpointFilesDamaged(t *testing.T) {
	data := lgssmSim(t)
	data.Sequences[0].Y = data.Sequences[0].Y[:200]
	fit := func(dir string) (*sgmcmc.Posterior, error) {
		return sgmcmc.Fit(context.Background(), models.LGSSM{}, data, sgmcmc.FitSettings{Exact: true, Seed: 3, Chains: 2,
			Iterations: 300, AdaptWindow: 100, WarmUp: 50, KSDDraws: -1, Checkpoint: filepath.Join(dir, "ck")})
	}
	src := t.TempDir()
	whole, err := fit(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"ck", "ck.prep", "ck.draws"} {
		dir := t.TempDir()
		for _, n := range []string{"ck", "ck.prep", "ck.draws"} {
			b, err := os.ReadFile(filepath.Join(src, n))
			if err != nil {
				t.Fatal(err)
			}
			if n == name {
				// A digit in the middle of the JSON, or a byte of a draw.
				i := len(b) / 2
				for name != "ck.draws" && (b[i] < '1' || b[i] > '8') {
					i++
				}
				b[i] ^= 0x01
			}
			if err := os.WriteFile(filepath.Join(dir, n), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		_, err := fit(dir)
		path := filepath.Join(dir, name)
		msg := ""
		if err != nil {
			msg = err.Error()
		}
		t.Logf("%s: %v", name, err)
		if !errors.Is(err, sgmcmc.ErrCheckpoint) || !strings.Contains(msg, path+" is damaged") ||
			!strings.Contains(msg, "delete ") || !strings.Contains(msg, "or use another checkpoint path") || strings.Contains(msg, "\n") {
			t.Errorf("%s with a flipped byte: error %v, want one line naming %s as damaged, with the cure", name, err, path)
		}
	}
	// The files as written resume to the same posterior (a finished run).
	again, err := fit(src)
	if err != nil {
		t.Fatal(err)
	}
	for c := range whole.U {
		if len(again.U[c]) != len(whole.U[c]) || again.U[c][len(again.U[c])-1] != whole.U[c][len(whole.U[c])-1] {
			t.Errorf("chain %d: the undamaged checkpoint resumed to other draws", c)
		}
	}
}
