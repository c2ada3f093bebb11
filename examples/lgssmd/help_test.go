package main

import (
	"testing"

	"github.com/pbsgmcmc/pbsgmcmc/examples/internal/compare"
)

// TestHelpExitsZero: -h prints the usage and exits 0, like the other
// examples; an unknown flag exits 1.
func TestHelpExitsZero(t *testing.T) {
	compare.CheckHelpExits(t, "TestHelpExitsZero", "lgssmd", main)
}
