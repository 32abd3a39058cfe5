package hostclock

import (
	"errors"
	"fmt"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/clockwatch/clockwatch/internal/host"
	"github.com/clockwatch/clockwatch/internal/kernel"
)

// SysTimex reads the kernel's clock discipline state with adjtimex(2) and
// Modes=0, which only reads: it needs no privilege and changes nothing.
type SysTimex struct{}

var _ TimexReader = SysTimex{}

// ReadTimex calls adjtimex read-only.
func (SysTimex) ReadTimex() (kernel.RawTimex, error) {
	var tx syscall.Timex // Modes 0: a pure read.
	// Raw: it never blocks, and on the idle daemon's sampling the syscall
	// package's call would wake the runtime's monitor thread (host).
	state, err := host.ReadTimex(&tx)
	if err != nil {
		if errors.Is(err, unix.EPERM) {
			return kernel.RawTimex{}, fmt.Errorf("adjtimex (read-only): %w; a seccomp filter blocks it (systemd's ProtectClock=yes does: use an empty CapabilityBoundingSet instead)", err)
		}
		return kernel.RawTimex{}, fmt.Errorf("adjtimex (read-only): %w", err)
	}
	return kernel.RawTimex{
		Offset:    tx.Offset,
		Freq:      tx.Freq,
		MaxError:  tx.Maxerror,
		EstError:  tx.Esterror,
		Status:    tx.Status,
		Constant:  tx.Constant,
		Precision: tx.Precision,
		Tolerance: tx.Tolerance,
		Tick:      tx.Tick,
		TAI:       tx.Tai,
		State:     state,
	}, nil
}
