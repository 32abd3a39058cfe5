package peers

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/clockwatch/clockwatch/internal/timesource"
)

// DefaultPort is the peers' UDP port: the number of the metrics' TCP port
// (9847), another protocol.
const DefaultPort = 9847

// Config is the `peers:` section of clockwatch's configuration. The
// exchange is off unless a place to find peers is given (static, dns or
// kubernetes): then the agent answers on Listen and measures its peers.
type Config struct {
	// Listen is the UDP address the responder answers on.
	Listen string `yaml:"listen"`
	// Static are peers as "host:port".
	Static []string `yaml:"static"`
	// DNS is a name whose A and AAAA records are the peers (a headless
	// Service in front of the DaemonSet), on Listen's port.
	DNS string `yaml:"dns"`
	// Kubernetes makes every Node's InternalIP a peer, on Listen's port.
	Kubernetes bool `yaml:"kubernetes"`
	// Allow are the networks ("10.0.0.0/8") and addresses the responder
	// answers; empty: the peers' own addresses.
	Allow []string `yaml:"allow"`
	// Interval is the time between rounds; Exchanges the exchanges with
	// each peer a round, each bounded by Timeout.
	Interval  time.Duration `yaml:"interval"`
	Exchanges int           `yaml:"exchanges"`
	Timeout   time.Duration `yaml:"timeout"`
	// MaxRTT drops samples whose round trip is longer.
	MaxRTT time.Duration `yaml:"max_rtt"`
	// MaxOffset is the majority judge's bound: this node is outside when
	// its offset to a strict majority of the peers it measured exceeds it
	// beyond the samples' uncertainty.
	MaxOffset time.Duration `yaml:"max_offset"`
	// Sample is how many peers a round measures at most (a rotating window
	// of a larger fleet).
	Sample int `yaml:"sample"`
	// Refresh is how often DNS, the Node list and static names are read
	// again.
	Refresh time.Duration `yaml:"refresh"`
	// RateLimit is how many requests a second each source address is
	// answered (bursts of 4 × exchanges, at least 16).
	RateLimit float64 `yaml:"rate_limit"`
	// KeyFile holds symmetric keys ("ID TYPE KEY" lines); when set, the
	// responder answers only requests signed with one of them, and the
	// querier signs with KeyID.
	KeyFile string `yaml:"key_file"`
	KeyID   uint32 `yaml:"key_id"`
}

// DefaultConfig returns the configuration used when the file says nothing:
// no peers, so no exchange.
func DefaultConfig() Config {
	return Config{
		Listen:    ":" + strconv.Itoa(DefaultPort),
		Interval:  5 * time.Second,
		Exchanges: 4,
		Timeout:   500 * time.Millisecond,
		MaxRTT:    50 * time.Millisecond,
		MaxOffset: 100 * time.Millisecond,
		Sample:    16,
		Refresh:   time.Minute,
		RateLimit: 4,
	}
}

// Enabled reports whether any place to find peers is configured.
func (c Config) Enabled() bool { return len(c.Static) > 0 || c.DNS != "" || c.Kubernetes }

// On is Enabled: the section has no mode, its places to find peers are its
// switch.
func (c Config) On() bool { return c.Enabled() }

// SourceRole is the peers' role: a second opinion, whose verdict
// (outside the fleet) is a stepdown trigger of its own.
func (c Config) SourceRole() timesource.Role { return timesource.SecondOpinion }

// Turn turns the exchange off (no place to find peers) or, when one is
// configured, on.
func (c *Config) Turn(on bool) error {
	if !on {
		c.Static, c.DNS, c.Kubernetes = nil, "", false
	} else if !c.Enabled() {
		return errors.New("peers: no place to find peers (peers.static, peers.dns or peers.kubernetes)")
	}
	return nil
}

// spacing is the pause between a round's exchanges with one peer.
const spacing = 10 * time.Millisecond

// Burst is the rate limiter's burst: a round's exchanges of a few peers
// behind one address (NAT).
func (c Config) Burst() int { return max(16, 4*c.Exchanges) }

// Port is Listen's port: the port of the peers DNS and Kubernetes give.
func (c Config) Port() uint16 {
	_, p, _ := net.SplitHostPort(c.Listen)
	n, _ := strconv.ParseUint(p, 10, 16)
	return uint16(n)
}

// Prefixes parses Allow (valid: Validate checks).
func (c Config) Prefixes() []netip.Prefix {
	var out []netip.Prefix
	for _, a := range c.Allow {
		if p, err := parsePrefix(a); err == nil {
			out = append(out, p)
		}
	}
	return out
}

func parsePrefix(s string) (netip.Prefix, error) {
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		return p.Masked(), err
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, err
	}
	return netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()), nil
}

// Keys reads KeyFile (nil when none is set).
func (c Config) Keys() (Keys, *Key, error) {
	if c.KeyFile == "" {
		return nil, nil, nil
	}
	ks, err := ReadKeys(c.KeyFile)
	if err != nil {
		return nil, nil, fmt.Errorf("peers.key_file: %w", err)
	}
	k, ok := ks[c.KeyID]
	if !ok {
		return nil, nil, fmt.Errorf("peers.key_id: key %d is not in %s", c.KeyID, c.KeyFile)
	}
	return ks, &k, nil
}

// Validate reports every problem, naming each field by its YAML path under
// `peers:`. It reads the key file, so that --config.check finds a bad one.
func (c Config) Validate() error {
	var errs []error
	bad := func(key, format string, a ...any) {
		errs = append(errs, fmt.Errorf("peers.%s: "+format, append([]any{key}, a...)...))
	}
	if host, port, err := net.SplitHostPort(c.Listen); err != nil {
		bad("listen", "want host:port (\":9847\" for every address), got %q", c.Listen)
	} else if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		bad("listen", "port %q is not a number from 0 to 65535", port)
	} else if host != "" && net.ParseIP(host) == nil {
		bad("listen", "host %q is not an IP address (or empty for every address)", host)
	}
	seen := map[string]bool{}
	for i, s := range c.Static {
		key := fmt.Sprintf("static[%d]", i)
		host, port, err := net.SplitHostPort(s)
		n, perr := strconv.ParseUint(port, 10, 16)
		switch {
		case err != nil:
			bad(key, "want host:port ([IPv6]:port), got %q", s)
		case perr != nil || n == 0:
			bad(key, "port %q is not a number from 1 to 65535", port)
		case host == "":
			bad(key, "no host in %q", s)
		case seen[s]:
			bad(key, "%q is listed twice", s)
		}
		seen[s] = true
	}
	if c.DNS != "" && (strings.ContainsAny(c.DNS, ":/ ") || len(c.DNS) > 253) {
		bad("dns", "want a DNS name without a port (the peers answer on peers.listen's port), got %q", c.DNS)
	}
	if (c.DNS != "" || c.Kubernetes) && c.Port() == 0 {
		bad("listen", "port 0 picks a port at random, which peers found by dns or kubernetes cannot know")
	}
	for i, a := range c.Allow {
		if _, err := parsePrefix(a); err != nil {
			bad(fmt.Sprintf("allow[%d]", i), "want an address or a network (10.0.0.0/8), got %q", a)
		}
	}
	if c.Interval < time.Second || c.Interval > time.Hour {
		bad("interval", "must be between 1s and 1h, got %s", c.Interval)
	}
	if c.Exchanges < 1 || c.Exchanges > 16 {
		bad("exchanges", "must be between 1 and 16, got %d", c.Exchanges)
	}
	if c.Timeout < time.Millisecond || c.Timeout > 10*time.Second {
		bad("timeout", "must be between 1ms and 10s, got %s", c.Timeout)
	} else if c.Exchanges >= 1 && c.Exchanges <= 16 && c.Interval >= time.Second {
		if round := time.Duration(c.Exchanges)*c.Timeout + time.Duration(c.Exchanges-1)*spacing; round > c.Interval {
			bad("interval", "must be at least exchanges × timeout + (exchanges − 1) × 10ms = %s, got %s", round, c.Interval)
		}
	}
	if c.MaxRTT < time.Microsecond || c.MaxRTT > c.Timeout || c.MaxRTT > 10*time.Second {
		bad("max_rtt", "must be between 1µs and peers.timeout (%s), got %s", c.Timeout, c.MaxRTT)
	}
	if c.MaxOffset < time.Microsecond || c.MaxOffset > time.Hour {
		bad("max_offset", "must be between 1µs and 1h, got %s", c.MaxOffset)
	}
	if c.Sample < 2 || c.Sample > 1024 {
		bad("sample", "must be between 2 and 1024 (the judge needs two peers), got %d", c.Sample)
	}
	if c.Refresh < 10*time.Second || c.Refresh > 24*time.Hour {
		bad("refresh", "must be between 10s and 24h, got %s", c.Refresh)
	}
	if !(c.RateLimit > 0 && c.RateLimit <= 1000) {
		bad("rate_limit", "must be between 0 and 1000 requests a second, got %v", c.RateLimit)
	} else if c.Interval >= time.Second && c.Exchanges >= 1 {
		if need := float64(c.Exchanges) / c.Interval.Seconds(); c.RateLimit < need {
			bad("rate_limit", "must be at least exchanges / interval = %.3g a second, or the peers' own rounds are refused; got %v", need, c.RateLimit)
		}
	}
	switch {
	case c.KeyFile == "" && c.KeyID != 0:
		bad("key_id", "is set without peers.key_file")
	case c.KeyFile != "" && (c.KeyID < 1 || c.KeyID > 65535):
		bad("key_id", "must be between 1 and 65535 with peers.key_file, got %d", c.KeyID)
	case c.KeyFile != "":
		if _, _, err := c.Keys(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
