package compare

import (
	"runtime"

	"github.com/pbsgmcmc/pbsgmcmc/sgmcmc"
)

// store is an sgmcmc.Recorder keeping at most cap draws per chain with a
// doubling thinning: when a chain's buffer is full every other draw is
// dropped and the stride doubles, so the kept draws stay evenly spaced over
// the whole run whatever its length.
type store struct {
	dim, cap int
	chains   []stored
}

type stored struct {
	stride int
	u      []float64
	iter   []int
	secs   []float64
}

func newStore(chains, dim, cap int) *store {
	return &store{dim: dim, cap: cap, chains: make([]stored, chains)}
}

func (s *store) Init(info sgmcmc.Info) error {
	for i := range s.chains {
		s.chains[i] = stored{stride: 1}
	}
	return nil
}

func (s *store) Record(d *sgmcmc.Draw) error {
	c := &s.chains[d.Chain]
	if d.Iter%c.stride != 0 {
		return nil
	}
	if len(c.iter) == s.cap {
		c.stride *= 2
		n := 0
		for i, it := range c.iter {
			if it%c.stride == 0 {
				copy(c.u[n*s.dim:(n+1)*s.dim], c.u[i*s.dim:(i+1)*s.dim])
				c.iter[n], c.secs[n] = it, c.secs[i]
				n++
			}
		}
		c.u, c.iter, c.secs = c.u[:n*s.dim], c.iter[:n], c.secs[:n]
		if d.Iter%c.stride != 0 {
			return nil
		}
	}
	c.u = append(c.u, d.U...)
	c.iter = append(c.iter, d.Iter)
	c.secs = append(c.secs, d.Elapsed.Seconds())
	return nil
}

func (s *store) Done(*sgmcmc.Result) error { return nil }

func runtimeProcs() int { return runtime.GOMAXPROCS(0) }
