package par

import (
	"sync/atomic"
	"testing"
)

// TestDo: every job runs exactly once, whatever the number of workers,
// and no more than workers run at the same time.
func TestDo(t *testing.T) {
	for _, workers := range []int{-1, 0, 1, 2, 3, 8} {
		for _, n := range []int{0, 1, 2, 7, 100} {
			runs := make([]int32, n)
			var live, most atomic.Int32
			Do(n, workers, func(i int) {
				l := live.Add(1)
				for {
					m := most.Load()
					if l <= m || most.CompareAndSwap(m, l) {
						break
					}
				}
				atomic.AddInt32(&runs[i], 1)
				live.Add(-1)
			})
			for i, r := range runs {
				if r != 1 {
					t.Fatalf("workers %d, n %d: job %d ran %d times", workers, n, i, r)
				}
			}
			if lim := int32(max(workers, 1)); most.Load() > lim {
				t.Errorf("workers %d, n %d: %d jobs ran at once, want at most %d", workers, n, most.Load(), lim)
			}
		}
	}
}
