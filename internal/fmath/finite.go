package fmath

// FirstNonFinite returns the index of the first NaN or ±Inf in x, or -1.
func FirstNonFinite(x []float64) int {
	for i, v := range x {
		// v-v is NaN for NaN and ±Inf and 0 otherwise: one test per element.
		if v-v != 0 {
			return i
		}
	}
	return -1
}
