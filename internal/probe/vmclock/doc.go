// Package vmclock reads the hypervisor's VMClock page, /dev/vmclock0 (Linux
// 6.13 and later, driver ptp_vmclock): the disruption marker the hypervisor
// changes on every live migration and snapshot restore, the hypervisor's
// clock status and leap indicator, the error bounds of the time it offers
// (each valid only with its flag), and the "disruption soon / imminent"
// flags of planned maintenance. The layout is Linux's
// include/uapi/linux/vmclock-abi.h.
//
// Decode is a pure function over the page's bytes, tested with pages
// captured from qemu 10's vmclock device in a real guest (testdata/).
// ReadMemory reads a mapped page under its seqlock; OpenDevice maps the
// device read-only. The Poller behind the Device interface is the
// long-running task: it reads the page every poll interval (a memory read,
// no system call), keeps the last result and turns it into a
// timesource.Reading whose marker and "unreliable" status the stepdown
// policy judges. Without the device (mode auto) it logs one line and reports
// the source absent. Nothing here imports Prometheus.
package vmclock
