//go:build linux

package vmclock

import (
	"fmt"
	"os"
	"syscall"
)

// mappedDevice is the VMClock device mapped read-only.
type mappedDevice struct {
	path string
	mem  []byte
}

var _ Device = (*mappedDevice)(nil)

// OpenDevice maps the VMClock device at path (/dev/vmclock0) read-only: one
// page, as ptp_vmclock allows. A missing device is os.ErrNotExist (the
// poller then reports the source absent); a device clockwatch may not read
// (EACCES: its mode; EPERM: a device ACL) is os.ErrPermission, with the udev
// rule, the group and the unit's settings that fix it.
func OpenDevice(path string) (Device, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, explainOpen(path, err)
	}
	defer f.Close() // the mapping outlives the descriptor
	mem, err := syscall.Mmap(int(f.Fd()), 0, os.Getpagesize(), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("mapping %s: %w", path, err)
	}
	return &mappedDevice{path: path, mem: mem}, nil
}

// Read reads the page under its seqlock.
func (d *mappedDevice) Read() (Page, error) {
	p, err := ReadMemory(d.mem)
	if err != nil {
		return Page{}, fmt.Errorf("reading %s: %w", d.path, err)
	}
	return p, nil
}

// Close unmaps the page.
func (d *mappedDevice) Close() error {
	if d.mem == nil {
		return nil
	}
	err := syscall.Munmap(d.mem)
	d.mem = nil
	return err
}
