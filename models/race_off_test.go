//go:build !race

package models_test

// raceEnabled reports a -race build, whose sync.Pool drops items on
// purpose, so allocation counts are not meaningful.
const raceEnabled = false
