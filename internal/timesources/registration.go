package timesources

import (
	"context"
	"time"

	"github.com/clockwatch/clockwatch/internal/timesource"
)

// Registration is one kind of time source, made by Register (the kernel's,
// which has no section, by hand): how the daemon builds it from its section
// and how `clockwatch status` polls it once.
type Registration struct {
	// Name is the source's name, as its readings carry it.
	Name string
	// Section is its section's YAML key ("" for the kernel's, which has
	// none).
	Section string
	Traits
	// Switch is the --[no-]collector.<Name> command-line switch that turns
	// the source on or off over the configuration file (nil: none).
	Switch *Switch

	defaults func(*Sections)
	section  func(*Sections) Section
	judges   func(*Sections) *Judges
	fold     func(*Sections)
	build    func(*Sections, Env) *Member
	status   func(context.Context, *Sections, Env) []Report
	cadence  func(*Sections) Cadence
}

// Cadence is how often the stepdown feed runs when it follows a source's
// polls: every Poll while a source has news at its own rate, and at least
// every MaxQuiet.
type Cadence struct{ Poll, MaxQuiet time.Duration }

// Section is what the registry asks of every source's section, the same
// way for each: the sections that embed timesource.Common have it from
// there; ntp_probes and peers, whose lists are their switch, have their own.
type Section interface {
	// Validate reports every problem, naming each key by its YAML path.
	Validate() error
	// On reports whether the source runs.
	On() bool
	// SourceRole is what its readings may do.
	SourceRole() timesource.Role
}

// Source is a source as it registers: its name, its section and how to
// build and poll it.
type Source[C any] struct {
	Name string
	// Section is the YAML key of its section; Field is that section in
	// Sections; Default is the section when the file says nothing.
	Section string
	Field   func(*Sections) *C
	Default func() C
	Traits
	// New builds the running source from its section (which is on and
	// valid): its readings, tasks and metrics. The registry sets the
	// member's name, traits and role (the section's).
	New func(c C, env Env) *Member
	// Status is its StatusOnce (nil: `clockwatch status` does not poll it).
	Status timesource.StatusFunc[C]
	// Switch is the help of its --[no-]collector.<Name> switch ("": none).
	Switch string
	// Cadence, for the source whose polls the stepdown feed follows
	// (Member.Polled), is the feed's cadence from its section (nil: it
	// sets none).
	Cadence func(c C) Cadence
}

// Register turns s into its registration: nothing else is written by hand
// for a source. A pointer to its section is a Section that can be turned
// on and off (Turn): timesource.Common gives both.
func Register[C any, P interface {
	*C
	Section
	Turn(on bool) error
}](s Source[C]) Registration {
	reg := Registration{Name: s.Name, Section: s.Section, Traits: s.Traits,
		defaults: func(ss *Sections) { *s.Field(ss) = s.Default() },
		section:  func(ss *Sections) Section { return P(s.Field(ss)) },
		build: func(ss *Sections, env Env) *Member {
			c := *s.Field(ss)
			if !P(&c).On() {
				return nil
			}
			return s.New(c, env)
		}}
	if _, ok := any(P(new(C))).(interface{ OwnJudges() *Judges }); ok {
		reg.judges = func(ss *Sections) *Judges { return any(P(s.Field(ss))).(interface{ OwnJudges() *Judges }).OwnJudges() }
	}
	if _, ok := any(P(new(C))).(interface{ Fold() }); ok {
		reg.fold = func(ss *Sections) { any(P(s.Field(ss))).(interface{ Fold() }).Fold() }
	}
	if s.Status != nil {
		reg.status = func(ctx context.Context, ss *Sections, env Env) []Report {
			c := *s.Field(ss)
			if !P(&c).On() {
				return nil
			}
			st, ok := s.Status(ctx, c, env.host())
			if !ok {
				return nil
			}
			st.Reading.Role = P(&c).SourceRole()
			return []Report{{Reading: st.Reading, Lines: st.Lines, Notes: st.Notes}}
		}
	}
	if s.Cadence != nil {
		reg.cadence = func(ss *Sections) Cadence { return s.Cadence(*s.Field(ss)) }
	}
	if s.Switch != "" {
		reg.Switch = &Switch{Help: s.Switch, Set: func(cfg Sectioned, on bool) error { return P(s.Field(cfg.SourceSections())).Turn(on) }}
	}
	return reg
}

// Switch turns a source on or off in a configuration.
type Switch struct {
	// Help says what the switch does, for --help.
	Help string
	// Set turns the source on or off in cfg (the configuration), or says
	// why it cannot be turned on.
	Set func(cfg Sectioned, on bool) error
}

// Report is one source's contribution to `clockwatch status`.
type Report struct {
	Reading timesource.Reading
	// Lines are the source's rich state for the report, in order.
	Lines []timesource.Line
	Notes []timesource.Note
	Traits
}

// Build builds the enabled sources of cfg (the configuration), each
// member named, with its traits and its section's role, which its readings
// carry.
func Build(cfg Sectioned, env Env) Members {
	return build(Registry(), cfg.SourceSections(), env)
}

func build(regs []Registration, ss *Sections, env Env) Members {
	var ms Members
	for _, reg := range regs {
		m := reg.build(ss, env)
		if m == nil {
			continue
		}
		m.Name, m.Traits = reg.Name, reg.Traits
		if reg.section != nil {
			m.Role = reg.section(ss).SourceRole()
			readings, role := m.Readings, m.Role
			m.Readings = func() []timesource.Reading {
				rs := readings()
				for i := range rs {
					rs[i].Role = role
				}
				return rs
			}
		}
		ms = append(ms, m)
	}
	return ms
}

// Status polls every enabled source once, for `clockwatch status`.
func Status(ctx context.Context, cfg Sectioned, env Env) []Report {
	return status(ctx, Registry(), cfg.SourceSections(), env)
}

func status(ctx context.Context, regs []Registration, ss *Sections, env Env) []Report {
	var out []Report
	for _, reg := range regs {
		if reg.status == nil {
			continue
		}
		for _, r := range reg.status(ctx, ss, env) {
			r.Traits = reg.Traits
			out = append(out, r)
		}
	}
	return out
}

// FeedCadence is the stepdown feed's cadence: that of the first
// registration that sets one (chronyd's: its poll_interval and
// max_poll_interval), on or off, as the feed has always had it.
func FeedCadence(cfg Sectioned) Cadence { return feedCadence(Registry(), cfg.SourceSections()) }

func feedCadence(regs []Registration, ss *Sections) Cadence {
	for _, reg := range regs {
		if reg.cadence != nil {
			return reg.cadence(ss)
		}
	}
	return Cadence{Poll: time.Second, MaxQuiet: time.Second}
}

// Disciplined reports whether any report of a source that disciplines the
// clock answered with a time solution: the rule of Members.Disciplining,
// for a single poll.
func Disciplined(rs []Report) bool {
	for _, r := range rs {
		if r.Disciplines && Answers(r.Reading) {
			return true
		}
	}
	return false
}
