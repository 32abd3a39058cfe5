package ptp

import (
	"time"

	"github.com/facebook/time/ptp/protocol"
)

// Port is one PTP port of the clock (PORT_PROPERTIES_NP).
type Port struct {
	// Number is the port number (1-based).
	Number int
	// Interface is the network interface the port runs on.
	Interface string
	// State is the port state: INITIALIZING, FAULTY, DISABLED, LISTENING,
	// PRE_MASTER, MASTER, PASSIVE, UNCALIBRATED, SLAVE (or GRAND_MASTER).
	State protocol.PortState
	// Timestamping is SOFTWARE, HARDWARE, LEGACY_HW, ONESTEP or P2P1STEP.
	Timestamping string
}

// TimeProperties is the TIME_PROPERTIES_DATA_SET: what the grandmaster
// says of its time.
type TimeProperties struct {
	// CurrentUTCOffset is TAI − UTC in seconds, meaningful when
	// UTCOffsetValid.
	CurrentUTCOffset int
	// Leap61 and Leap59 announce a positive or negative leap second at the
	// end of the current UTC day.
	Leap61, Leap59 bool
	UTCOffsetValid bool
	// PTPTimescale is true for the PTP (TAI) timescale, false for ARB.
	PTPTimescale bool
	// TimeTraceable and FrequencyTraceable say the grandmaster's time and
	// frequency are traceable to a primary reference.
	TimeTraceable, FrequencyTraceable bool
	// TimeSource is the grandmaster's source: 0x20 GNSS, 0xa0 internal
	// oscillator, ...
	TimeSource uint8
}

// Data is one reading of ptp4l.
type Data struct {
	// ClockIdentity is this clock's identity (DEFAULT_DATA_SET), as pmc
	// prints it (001122.fffe.334455).
	ClockIdentity string
	// ClockClass and ClockAccuracy are this clock's own quality; SlaveOnly
	// its configuration.
	ClockClass    uint8
	ClockAccuracy uint8
	SlaveOnly     bool
	// Domain is ptp4l's domainNumber.
	Domain int
	// Ports are the clock's ports, by number.
	Ports []Port
	// StepsRemoved, OffsetFromMaster and MeanPathDelay are the
	// CURRENT_DATA_SET: the offset is this clock minus the master's
	// (positive: this clock is ahead), the delay is the one-way mean (half
	// the round trip).
	StepsRemoved     int
	OffsetFromMaster time.Duration
	MeanPathDelay    time.Duration
	// ParentPort is the master port this clock follows (PARENT_DATA_SET);
	// its own identity when it has no master.
	ParentPort string
	// GrandmasterIdentity and the grandmaster's announced quality.
	GrandmasterIdentity      string
	GrandmasterClockClass    uint8
	GrandmasterClockAccuracy uint8
	GrandmasterPriority1     uint8
	GrandmasterPriority2     uint8
	// GrandmasterPresent is TIME_STATUS_NP's gmPresent: another clock is
	// the grandmaster (false when this clock is, or it has none).
	GrandmasterPresent bool
	// MasterOffset is TIME_STATUS_NP's master_offset: the servo's last
	// measured offset, updated even while the port is UNCALIBRATED.
	MasterOffset time.Duration
	// Time is the TIME_PROPERTIES_DATA_SET.
	Time TimeProperties
}

// Grandmaster reports whether this clock is the grandmaster of its domain.
func (d Data) Grandmaster() bool {
	return d.GrandmasterIdentity != "" && d.GrandmasterIdentity == d.ClockIdentity
}

// SoftwareTimestamping reports whether every port uses software
// timestamps: then ptp4l's offset is the system clock's.
func (d Data) SoftwareTimestamping() bool {
	for _, p := range d.Ports {
		if p.Timestamping != "SOFTWARE" {
			return false
		}
	}
	return len(d.Ports) > 0
}
