package sgmcmc

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pbsgmcmc/pbsgmcmc/models"
)

// TestPrepFormat: the .prep file names its format, and a file of another
// (an older layout) is refused at resume with ErrCheckpoint and the cure,
// instead of being read into the wrong fields.
func TestPrepFormat(t *testing.T) {
	data := lgssmSimInternal(t)
	data.Sequences[0].Y = data.Sequences[0].Y[:200]
	dir := t.TempDir()
	set := FitSettings{Exact: true, Seed: 3, Chains: 2, Iterations: 300, AdaptWindow: 100, WarmUp: 50, KSDDraws: -1,
		Checkpoint: filepath.Join(dir, "ck")}
	if _, err := Fit(context.Background(), models.LGSSM{}, data, set); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "ck.prep")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	body, why := unseal(b)
	if why != "" {
		t.Fatal(why)
	}
	var pf prepFile
	if err := json.Unmarshal(body, &pf); err != nil || pf.Format != prepFormat {
		t.Fatalf("format %q (%v), want %q", pf.Format, err, prepFormat)
	}
	pf.Format = "pbsgmcmc/sgmcmc preparation v1"
	if body, err = json.Marshal(pf); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, seal(body), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Fit(context.Background(), models.LGSSM{}, data, set)
	if !errors.Is(err, ErrCheckpoint) || !strings.Contains(err.Error(), "not a preparation of this version") || !strings.Contains(err.Error(), "delete") {
		t.Errorf("resume from a .prep of another format: %v, want ErrCheckpoint saying so, with the cure", err)
	}
}
