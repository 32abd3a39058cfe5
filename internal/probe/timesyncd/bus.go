package timesyncd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"syscall"
	"time"

	"github.com/godbus/dbus/v5"
)

// The D-Bus names of timesyncd's manager.
const (
	BusName    = "org.freedesktop.timesync1"
	ObjectPath = dbus.ObjectPath("/org/freedesktop/timesync1")
	Interface  = "org.freedesktop.timesync1.Manager"
)

// ErrAbsent is why a poll found no timesyncd: no bus socket, or nobody owns
// org.freedesktop.timesync1. In mode auto it is a state, not a failure.
var ErrAbsent = errors.New("systemd-timesyncd is not on the bus")

// onBusError marks a failure that comes from timesyncd's answer (or the
// bus's policy about it): timesyncd is there, so it is not absence.
type onBusError struct{ err error }

func (e onBusError) Error() string { return e.err.Error() }
func (e onBusError) Unwrap() error { return e.err }

// onBus reports whether err came from a timesyncd that is on the bus.
func onBus(err error) bool {
	var e onBusError
	return errors.As(err, &e)
}

// Bus reads timesyncd's properties. Properties must honour ctx's deadline.
// Appeared receives when timesyncd takes its name on the bus (nil: never),
// so that a poller waiting out an absence polls at once.
type Bus interface {
	Properties(ctx context.Context) (Properties, error)
	Appeared() <-chan struct{}
	Close() error
}

// dbusBus is the real Bus: one private connection to the bus, dialled
// lazily and again after any error, which also watches timesyncd's name
// (NameOwnerChanged for org.freedesktop.timesync1: a match rule, nothing
// while nothing changes).
type dbusBus struct {
	socket   string
	conn     *dbus.Conn
	appeared chan struct{}
}

var _ Bus = (*dbusBus)(nil)

// newDBusBus returns a Bus for the configured address, which must be valid
// (and resolved: Config.Resolve).
func newDBusBus(address string) *dbusBus {
	p, _ := socketPath(address, noEnv)
	return &dbusBus{socket: p, appeared: make(chan struct{}, 1)}
}

// Appeared implements Bus.
func (b *dbusBus) Appeared() <-chan struct{} { return b.appeared }

// watchName asks the bus for NameOwnerChanged of timesyncd's name and
// forwards a new owner to b.appeared until the connection closes. Without
// the watch (a bus that refuses the match) the poller still asks again on
// its own.
func (b *dbusBus) watchName(conn *dbus.Conn) error {
	if err := conn.AddMatchSignal(dbus.WithMatchSender("org.freedesktop.DBus"), dbus.WithMatchInterface("org.freedesktop.DBus"),
		dbus.WithMatchMember("NameOwnerChanged"), dbus.WithMatchArg(0, BusName)); err != nil {
		return fmt.Errorf("watching %s on the bus: %w", BusName, err)
	}
	signals := make(chan *dbus.Signal, 4)
	conn.Signal(signals)
	go func() {
		for sig := range signals {
			// Body: name, old owner, new owner; a new owner is timesyncd
			// taking the name.
			if len(sig.Body) == 3 {
				if owner, _ := sig.Body[2].(string); owner != "" {
					select {
					case b.appeared <- struct{}{}:
					default:
					}
				}
			}
		}
	}()
	return nil
}

// Close closes the connection.
func (b *dbusBus) Close() error {
	if b.conn == nil {
		return nil
	}
	err := b.conn.Close()
	b.conn = nil
	return err
}

// connect dials the bus socket and authenticates within ctx's deadline:
// godbus's own Auth and Hello would wait forever on a stuck bus.
func (b *dbusBus) connect(ctx context.Context) error {
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", b.socket)
	if err != nil {
		if errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ECONNREFUSED) {
			return fmt.Errorf("%w: no system bus at %s (%w)", ErrAbsent, b.socket, err)
		}
		if errors.Is(err, syscall.EACCES) {
			return fmt.Errorf("connecting to the system bus %s: permission denied (%w): the socket is normally open to every user; check its mode", b.socket, err)
		}
		return fmt.Errorf("connecting to the system bus %s: %w", b.socket, err)
	}
	uc := c.(*net.UnixConn)
	if dl, ok := ctx.Deadline(); ok {
		_ = uc.SetDeadline(dl)
	}
	conn, err := dbus.DialUnix(uc, dbus.WithContext(context.WithoutCancel(ctx)))
	if err == nil {
		if err = conn.Auth(nil); err == nil {
			err = conn.Hello()
		}
		if err != nil {
			conn.Close()
		}
	} else {
		uc.Close()
	}
	if err != nil {
		if errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.EOF) {
			// dbus-daemon drops a client whose uid its user database does
			// not know, before any reply: a container's user, typically.
			return fmt.Errorf("opening a D-Bus connection on %s: the bus closed it (%w): dbus-daemon drops users its user database does not name; make uid %d known on this host (a system user in its /etc/passwd)", b.socket, err, syscall.Geteuid())
		}
		return fmt.Errorf("opening a D-Bus connection on %s: %w", b.socket, err)
	}
	_ = uc.SetDeadline(time.Time{})
	b.conn = conn
	_ = b.watchName(conn) // best effort: the poller's recheck is the fallback
	return nil
}

// Properties implements Bus with one GetAll call that may not start
// timesyncd.
func (b *dbusBus) Properties(ctx context.Context) (Properties, error) {
	if b.conn == nil {
		if err := b.connect(ctx); err != nil {
			return Properties{}, err
		}
	}
	call := b.conn.Object(BusName, ObjectPath).CallWithContext(ctx, "org.freedesktop.DBus.Properties.GetAll",
		dbus.FlagNoAutoStart, Interface)
	if err := call.Err; err != nil {
		var de dbus.Error
		if errors.As(err, &de) {
			switch de.Name {
			case "org.freedesktop.DBus.Error.ServiceUnknown", "org.freedesktop.DBus.Error.NameHasNoOwner":
				// The connection is fine; timesyncd is not running.
				return Properties{}, fmt.Errorf("%w: nobody owns %s on %s", ErrAbsent, BusName, b.socket)
			case "org.freedesktop.DBus.Error.AccessDenied":
				return Properties{}, onBusError{fmt.Errorf("the bus's policy denies reading %s's properties (%s): install systemd's org.freedesktop.timesync1.conf, which allows GetAll for everyone", BusName, de.Error())}
			}
			return Properties{}, onBusError{fmt.Errorf("reading %s's properties: %w", BusName, err)}
		}
		b.Close()
		return Properties{}, fmt.Errorf("reading %s's properties on %s: %w", BusName, b.socket, err)
	}
	// The body as decoded: Call.Store would turn struct variants into
	// arrays of variants.
	var all map[string]dbus.Variant
	if len(call.Body) == 1 {
		all, _ = call.Body[0].(map[string]dbus.Variant)
	}
	if all == nil {
		return Properties{}, onBusError{fmt.Errorf("reading %s's properties: GetAll answered %d values, want one a{sv}", BusName, len(call.Body))}
	}
	p, err := decodeProperties(all)
	if err != nil {
		return p, onBusError{err}
	}
	return p, nil
}

// decodeProperties turns GetAll's answer into Properties. Properties that
// older systemd versions lack stay zero; a property of the wrong type is an
// error naming it.
func decodeProperties(all map[string]dbus.Variant) (Properties, error) {
	var p Properties
	var errs []error
	get := func(name string, dst any) {
		v, ok := all[name]
		if !ok {
			return
		}
		if err := v.Store(dst); err != nil {
			errs = append(errs, fmt.Errorf("property %s has signature %s: %w", name, v.Signature(), err))
		}
	}
	get("ServerName", &p.ServerName)
	var addr struct {
		Family int32
		Addr   []byte
	}
	get("ServerAddress", &addr)
	switch {
	case addr.Family == syscall.AF_INET && len(addr.Addr) == 4, addr.Family == syscall.AF_INET6 && len(addr.Addr) == 16:
		p.ServerAddress, _ = netip.AddrFromSlice(addr.Addr)
	case addr.Family != 0:
		errs = append(errs, fmt.Errorf("property ServerAddress: family %d with %d bytes", addr.Family, len(addr.Addr)))
	}
	usec := func(name string, dst *time.Duration) {
		var u uint64
		get(name, &u)
		*dst = time.Duration(min(u, math64/1000)) * time.Microsecond
	}
	usec("PollIntervalUSec", &p.PollInterval)
	usec("PollIntervalMinUSec", &p.PollIntervalMin)
	usec("PollIntervalMaxUSec", &p.PollIntervalMax)
	usec("RootDistanceMaxUSec", &p.RootDistanceMax)
	var freq int64
	get("Frequency", &freq)
	p.Frequency = float64(freq) / 65536 * 1e-6

	if v, ok := all["NTPMessage"]; ok {
		m, err := decodeMessage(v)
		if err != nil {
			errs = append(errs, err)
		}
		p.Message = m
	} else {
		errs = append(errs, errors.New("no NTPMessage property: systemd-timesyncd older than 239?"))
	}
	if err := errors.Join(errs...); err != nil {
		return Properties{}, fmt.Errorf("decoding %s's properties: %w", BusName, err)
	}
	return p, nil
}

// math64 is the largest int64, for clamping microsecond counts.
const math64 = 1<<63 - 1

// ntpMessageSignature is NTPMessage's D-Bus type since systemd 239.
const ntpMessageSignature = "(uuuuittayttttbtt)"

// wireMessage is NTPMessage as it travels: fields in the order of the
// signature.
type wireMessage struct {
	Leap, Version, Mode, Stratum uint32
	Precision                    int32
	RootDelay, RootDispersion    uint64
	RefID                        []byte
	Origin, Receive, Transmit    uint64
	Destination                  uint64
	Spike                        bool
	PacketCount                  uint64
	Jitter                       uint64
}

func decodeMessage(v dbus.Variant) (NTPMessage, error) {
	if s := v.Signature().String(); s != ntpMessageSignature {
		return NTPMessage{}, fmt.Errorf("property NTPMessage has signature %s, want %s", s, ntpMessageSignature)
	}
	var w wireMessage
	if err := v.Store(&w); err != nil {
		return NTPMessage{}, fmt.Errorf("property NTPMessage: %w", err)
	}
	if len(w.RefID) != 4 && len(w.RefID) != 0 {
		return NTPMessage{}, fmt.Errorf("property NTPMessage: reference ID of %d bytes, want 4", len(w.RefID))
	}
	d := func(u uint64) time.Duration { return time.Duration(min(u, math64/1000)) * time.Microsecond }
	// Timestamps of an empty message are garbage (timesyncd converts NTP's
	// zero to Unix time with unsigned wrap-around): clamp, Valid decides.
	ts := func(u uint64) int64 { return int64(min(u, math64)) }
	m := NTPMessage{
		Leap: w.Leap, Version: w.Version, Mode: w.Mode, Stratum: w.Stratum, Precision: w.Precision,
		RootDelay: d(w.RootDelay), RootDispersion: d(w.RootDispersion),
		Origin: ts(w.Origin), Receive: ts(w.Receive), Transmit: ts(w.Transmit), Destination: ts(w.Destination),
		Spike: w.Spike, PacketCount: w.PacketCount, Jitter: d(w.Jitter),
	}
	copy(m.RefID[:], w.RefID)
	return m, nil
}
