package timesyncd

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/clockwatch/clockwatch/internal/timesource"
)

// Modes of the `timesyncd:` section (timesource's): auto reads timesyncd
// when it is on the bus and stays silent when it is not; on pins it (its
// absence is an error: logged, counted, and a reading that is found but not
// up); off turns the poller off.
const (
	ModeAuto = timesource.ModeAuto
	ModeOn   = timesource.ModeOn
	ModeOff  = timesource.ModeOff
)

// AddressSystem is the system bus: $DBUS_SYSTEM_BUS_ADDRESS, else
// unix:path=/run/dbus/system_bus_socket.
const AddressSystem = "system"

// defaultSystemBus is the system bus socket when the environment names none.
const defaultSystemBus = "unix:path=/run/dbus/system_bus_socket"

// Config is the `timesyncd:` section of clockwatch's configuration.
type Config struct {
	// Common is the block every source shares: mode (auto, the default,
	// on or off), the older enabled, role (authoritative by default),
	// poll_interval (timesyncd itself polls its server every 32 s to 34
	// min, so a few seconds lose nothing) and timeout (of each poll,
	// connecting to the bus included).
	timesource.Common `yaml:",inline"`
	// Address is "system" or a D-Bus address of the form unix:path=PATH.
	Address string `yaml:"address"`
}

// DefaultConfig returns the configuration used when the file says nothing.
func DefaultConfig() Config {
	return Config{Common: timesource.Auto(timesource.Authoritative, 5*time.Second, 2*time.Second), Address: AddressSystem}
}

// Validate reports every problem, naming each field by its YAML path under
// `timesyncd:`.
func (c Config) Validate() error {
	errs := []error{c.Common.Validate("timesyncd", timesource.Limits{MinPoll: 100 * time.Millisecond, MaxPoll: time.Hour,
		Why: "each poll is a D-Bus call"})}
	if _, err := socketPath(c.Address, noEnv); err != nil {
		errs = append(errs, fmt.Errorf("timesyncd.address: %w", err))
	}
	return errors.Join(errs...)
}

// socketPath returns the unix socket of a bus address: "system" (the
// address in $DBUS_SYSTEM_BUS_ADDRESS as getenv gives it, else the default)
// or unix:path=PATH, the only transport a system bus uses.
func socketPath(address string, getenv func(string) string) (string, error) {
	if address == AddressSystem {
		address = defaultSystemBus
		if env := getenv("DBUS_SYSTEM_BUS_ADDRESS"); env != "" {
			address = env
		}
	}
	// A D-Bus address may list alternatives (a;b) and more keys (,guid=):
	// the first unix:path= wins.
	for _, alt := range strings.Split(address, ";") {
		rest, ok := strings.CutPrefix(alt, "unix:")
		if !ok {
			continue
		}
		for _, kv := range strings.Split(rest, ",") {
			if p, ok := strings.CutPrefix(kv, "path="); ok && strings.HasPrefix(p, "/") {
				return p, nil
			}
		}
	}
	return "", fmt.Errorf(`must be "system" or a D-Bus address unix:path=/absolute/path, got %q`, address)
}

// noEnv validates "system" without the environment: what it names is only
// known where the daemon runs.
func noEnv(string) string { return "" }

// Resolve returns c with what it takes from the environment (getenv): the
// system bus's address, $DBUS_SYSTEM_BUS_ADDRESS, in place of "system" when
// set.
func (c Config) Resolve(getenv func(string) string) Config {
	if env := getenv("DBUS_SYSTEM_BUS_ADDRESS"); c.Address == AddressSystem && env != "" {
		c.Address = env
	}
	return c
}
