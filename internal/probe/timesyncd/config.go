package timesyncd

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Modes of the `timesyncd:` section.
const (
	// ModeAuto reads timesyncd when it is on the bus and stays silent when
	// it is not.
	ModeAuto = "auto"
	// ModeOn pins timesyncd: it is expected, and its absence is an error
	// (logged, counted, and a reading that is found but not up).
	ModeOn = "on"
	// ModeOff turns the poller off.
	ModeOff = "off"
)

// AddressSystem is the system bus: $DBUS_SYSTEM_BUS_ADDRESS, else
// unix:path=/run/dbus/system_bus_socket.
const AddressSystem = "system"

// defaultSystemBus is the system bus socket when the environment names none.
const defaultSystemBus = "unix:path=/run/dbus/system_bus_socket"

// Config is the `timesyncd:` section of clockwatch's configuration.
type Config struct {
	// Mode is auto (the default), on or off.
	Mode string `yaml:"mode"`
	// Address is "system" or a D-Bus address of the form unix:path=PATH.
	Address string `yaml:"address"`
	// PollInterval is how often timesyncd is read. timesyncd itself polls
	// its server every 32 s to 34 min, so a few seconds lose nothing.
	PollInterval time.Duration `yaml:"poll_interval"`
	// Timeout bounds each poll (connecting to the bus included).
	Timeout time.Duration `yaml:"timeout"`
}

// DefaultConfig returns the configuration used when the file says nothing.
func DefaultConfig() Config {
	return Config{Mode: ModeAuto, Address: AddressSystem, PollInterval: 5 * time.Second, Timeout: 2 * time.Second}
}

// Enabled reports whether the poller runs.
func (c Config) Enabled() bool { return c.Mode != ModeOff }

// Validate reports every problem, naming each field by its YAML path under
// `timesyncd:`.
func (c Config) Validate() error {
	var errs []error
	switch c.Mode {
	case ModeAuto, ModeOn, ModeOff:
	default:
		errs = append(errs, fmt.Errorf("timesyncd.mode: must be auto, on or off, got %q", c.Mode))
	}
	if _, err := socketPath(c.Address, noEnv); err != nil {
		errs = append(errs, fmt.Errorf("timesyncd.address: %w", err))
	}
	if c.PollInterval < 100*time.Millisecond || c.PollInterval > time.Hour {
		errs = append(errs, fmt.Errorf("timesyncd.poll_interval: must be between 100ms and 1h (each poll is a D-Bus call), got %s", c.PollInterval))
	}
	if c.Timeout < time.Millisecond {
		errs = append(errs, fmt.Errorf("timesyncd.timeout: must be at least 1ms, got %s", c.Timeout))
	} else if c.PollInterval > 0 && c.Timeout > c.PollInterval {
		errs = append(errs, fmt.Errorf("timesyncd.timeout: must not exceed timesyncd.poll_interval (%s), got %s", c.PollInterval, c.Timeout))
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
