//go:build race

package sgmcmc

// raceEnabled reports a -race build. Tests of the fit's decisions, not of
// its concurrency, whose whole preparations run 5 to 10 times slower under
// the race detector, skip there (the full test pass runs them).
const raceEnabled = true
