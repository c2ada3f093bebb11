// Package par runs independent jobs on a bounded number of goroutines.
//
// The jobs write only their own results (job i into slot i), and the
// caller combines them in index order afterwards, so a result never
// depends on how many goroutines ran or in which order the jobs
// finished: the same seed gives the same draws with one worker or many.
package par

import (
	"sync"
	"sync/atomic"
)

// Do runs job(0), …, job(n−1) on min(workers, n) goroutines and returns
// when all are done. With workers ≤ 1 it runs them in order on the
// calling goroutine.
func Do(n, workers int, job func(i int)) {
	if workers <= 1 || n <= 1 {
		for i := range n {
			job(i)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(workers, n) {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				job(i)
			}
		})
	}
	wg.Wait()
}
