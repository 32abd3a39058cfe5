package peers

import (
	"slices"
	"time"

	"github.com/clockwatch/clockwatch/internal/timesource"
)

// Measure is one peer's best sample of a round, as the judge sees it.
type Measure struct {
	Peer string
	// Offset is the peer's clock minus this node's.
	Offset time.Duration
	RTT    time.Duration
	// PeerErrorBound is the peer's own error bound, when it said
	// (HasPeerErrorBound).
	PeerErrorBound    time.Duration
	HasPeerErrorBound bool
}

// Uncertainty is how far the sample's offset may be from the true
// difference of the two clocks as the peer's own daemon knows them: half
// the round trip (the path's asymmetry at worst) plus the peer's error
// bound.
func (m Measure) Uncertainty() time.Duration {
	u := timesource.Sum(m.RTT / 2)
	if m.HasPeerErrorBound {
		u = timesource.Sum(u, m.PeerErrorBound)
	}
	return u
}

// Disagrees reports whether the sample shows the two clocks more than
// maxOffset apart beyond its uncertainty.
func (m Measure) Disagrees(maxOffset time.Duration) bool {
	return timesource.Abs(m.Offset)-m.Uncertainty() > maxOffset
}

// Verdict is the majority judge's decision about this node's clock.
type Verdict struct {
	// Measured is how many peers the round measured; Disagreeing names
	// those more than the bound away.
	Measured    int
	Disagreeing []string
	// Decided is set when at least two peers were measured: with fewer
	// the judge decides nothing (a partitioned node neither steps down
	// nor resumes on its own word).
	Decided bool
	// Outside is set when a strict majority of the measured peers
	// disagree with this clock.
	Outside bool
	// FleetOffset is the median of the fleet's clocks as this node sees
	// them (each measured peer's, and this node's own at zero) minus this
	// node's clock: near zero for a node inside, the outlier's distance
	// for one outside, however few the peers.
	FleetOffset time.Duration
	// Uncertainty is the median uncertainty of the samples.
	Uncertainty time.Duration
}

// Judge decides, from one round's samples, whether this node's clock is
// outside the fleet: its offset to a strict majority (more than half) of
// the peers it measured, with at least two measured, exceeds maxOffset
// beyond each sample's uncertainty. A pure function of its inputs.
func Judge(ms []Measure, maxOffset time.Duration) Verdict {
	v := Verdict{Measured: len(ms), Decided: len(ms) >= 2}
	offs := []time.Duration{0}
	var us []time.Duration
	for _, m := range ms {
		if m.Disagrees(maxOffset) {
			v.Disagreeing = append(v.Disagreeing, m.Peer)
		}
		offs = append(offs, m.Offset)
		us = append(us, m.Uncertainty())
	}
	v.Outside = v.Decided && 2*len(v.Disagreeing) > len(ms)
	v.FleetOffset = median(offs)
	if len(us) > 0 {
		v.Uncertainty = median(us)
	}
	return v
}

// median of ds (not empty): the middle one, or the mean of the two middle
// ones.
func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return s[n/2-1]/2 + s[n/2]/2
}
