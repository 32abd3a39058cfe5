package sntp

import (
	"errors"
	"fmt"
	"time"

	"github.com/clockwatch/clockwatch/internal/timesource"
)

// SourceName names the NTP probes as one time source (the `ntp_probes:`
// section, their logs, the probe metrics' prefix); each server's readings
// are filed under SourcePrefix and the server.
const SourceName = "ntp_probes"

// SourcePrefix starts the source name of each probed server's readings:
// "ntp_probe/" and the server as configured.
const SourcePrefix = "ntp_probe/"

// The values of ntp_probes.role.
const (
	RoleSecondOpinion = "second_opinion"
	RoleAuthoritative = "authoritative"
)

// SourceRole is ntp_probes.role as a timesource.Role (a second opinion
// unless valid and authoritative).
func (c Config) SourceRole() timesource.Role {
	r, err := timesource.ParseRole(c.Role)
	if err != nil {
		return timesource.SecondOpinion
	}
	return r
}

// Reading is the result of one server's last round as a normalised reading:
// the offset of this clock against the server, its error bound |offset| +
// root distance, synchronised when the server is (leap not 3, stratum
// 1–15).
func (r Result) Reading(role timesource.Role) timesource.Reading {
	rd := timesource.Reading{Source: SourcePrefix + r.Server, Role: role, Found: !r.LastGood.IsZero(), Up: r.OK,
		Err: r.Err, HasData: !r.LastGood.IsZero(), LastSuccess: r.LastGood}
	if !rd.HasData {
		return rd
	}
	b := r.Best
	rd.Synchronized = b.Leap != 3 && b.Stratum >= 1 && b.Stratum <= 15
	off, err := timesource.Offset(rd.Source+"'s offset", b.Offset)
	dist, errD := timesource.BoundDuration(rd.Source+"'s root distance", b.RootDistance)
	rd.SetFigures(off, timesource.Sum(timesource.Abs(off), dist), errors.Join(err, errD))
	rd.Leap = timesource.Leap(b.Leap & 3)
	rd.Detail = fmt.Sprintf("stratum %d, round trip %v", b.Stratum, b.RTT)
	return rd
}

// Readings returns the last reading of every probed server; it never waits
// on the network. A reading older than two intervals (a wait, then a round
// that fits in one, as the configuration checks) and
// timesource.StaleGrace is a failed one: the round is stuck.
func (p *Prober) Readings() []timesource.Reading {
	var out []timesource.Reading
	now := time.Now()
	for _, r := range p.Results() {
		out = append(out, r.Reading(p.cfg.SourceRole()).Stale(now, 2*p.cfg.Interval+timesource.StaleGrace))
	}
	return out
}
