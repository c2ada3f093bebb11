package compare

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// ParseInts parses a comma-separated list of positive integers.
func ParseInts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || v < 1 {
			return nil, fmt.Errorf("%q is not a positive integer", f)
		}
		out = append(out, v)
	}
	return out, nil
}

// ParseFloats parses a comma-separated list of positive finite numbers.
func ParseFloats(s string) ([]float64, error) {
	var out []float64
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || !(v > 0) || math.IsInf(v, 1) {
			return nil, fmt.Errorf("%q is not a positive number", f)
		}
		out = append(out, v)
	}
	return out, nil
}

// ParseSet parses a comma-separated list of options from allowed.
func ParseSet(s string, allowed ...string) ([]string, error) {
	var out []string
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		ok := false
		for _, a := range allowed {
			ok = ok || f == a
		}
		if !ok {
			return nil, fmt.Errorf("unknown option %q (want %s)", f, strings.Join(allowed, ", "))
		}
		out = append(out, f)
	}
	return out, nil
}
