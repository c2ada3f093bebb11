package fmath

import (
	"encoding/binary"
	"math"
)

// AppendFloats appends x to b little-endian, bit-exactly (8 bytes each):
// the encoding of the samplers' checkpointed states.
func AppendFloats(b []byte, x ...float64) []byte {
	for _, v := range x {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(v))
	}
	return b
}

// ReadFloat returns the i-th float of b (AppendFloats' encoding).
func ReadFloat(b []byte, i int) float64 {
	return math.Float64frombits(binary.LittleEndian.Uint64(b[8*i:]))
}

// ReadFloats fills dst from b (AppendFloats' encoding); b must hold at
// least len(dst) floats.
func ReadFloats(dst []float64, b []byte) {
	for i := range dst {
		dst[i] = ReadFloat(b, i)
	}
}
