package amis

import (
	"fmt"
	"testing"
)

// BenchmarkBestProposal times the proposal fit between importance-sampling
// rounds on 1,400 points of a three-mode posterior in 7 dimensions (the
// size of MSV{D: 2}'s eighth round) with one worker and with two: the
// component counts are fitted in parallel (the choice is the same,
// TestBestProposalWorkers).
//
//	go test -run '^$' -bench BestProposal ./sgmcmc/internal/amis
func BenchmarkBestProposal(b *testing.B) {
	centres := [][]float64{{-2, 0, 0, 1, 0, 0, 0}, {0, 0, 0, 0, 0, 0, 0}, {2, 1, 0, 0, 0, 1, 0}}
	xs, lps, lw := normalPoints(1400, 7, 1, centres, 9)
	for _, w := range []int{1, 2} {
		b.Run(fmt.Sprintf("workers=%d", w), func(b *testing.B) {
			z := make([]float64, 7)
			for b.Loop() {
				if q, _, _, _, _ := BestProposal(xs, lps, lw, z, nil, w); q == nil {
					b.Fatal("no proposal")
				}
			}
		})
	}
}
