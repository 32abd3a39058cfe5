//go:build linux

package vmclock

import (
	"fmt"
	"os"
	"syscall"

	"github.com/clockwatch/clockwatch/internal/safefile"
)

// mappedDevice is the VMClock device mapped read-only.
type mappedDevice struct {
	path string
	mem  []byte
	// file is kept open for a regular file (a page saved for tests or an
	// emulation), whose size is checked again before every read: a
	// character device cannot shrink, a file can.
	file *os.File
	// size is how many bytes of mem the file held at the open.
	size int
}

var _ Device = (*mappedDevice)(nil)

// DeviceSpec is how the device is opened: never blocking (a FIFO in its
// place kept the source "starting" for ever), a character device or a
// regular file, through links (udev names devices through links).
var DeviceSpec = safefile.Spec{What: "the VMClock device", Links: safefile.AnyLinks, CharDevice: true}

// OpenDevice maps the VMClock device at path (/dev/vmclock0) read-only: one
// page, as ptp_vmclock allows. A missing device is os.ErrNotExist (the
// poller then reports the source absent); a device clockwatch may not read
// (EACCES: its mode; EPERM: a device ACL) is os.ErrPermission, with the udev
// rule, the group and the unit's settings that fix it. A regular file must
// hold at least MinSize bytes: a shorter one is not a page, and a read past
// its end would fault.
func OpenDevice(path string) (Device, error) {
	f, err := safefile.Open(DeviceSpec, path)
	if err != nil {
		return nil, explainOpen(path, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("the VMClock device %s: %w", path, err)
	}
	page := os.Getpagesize()
	size := page
	if fi.Mode().IsRegular() {
		if fi.Size() < MinSize {
			f.Close()
			return nil, fmt.Errorf("the VMClock device %s is a regular file of %d bytes, shorter than a VMClock page (at least %d): %w", path, fi.Size(), MinSize, ErrNotVMClock)
		}
		size = int(min(fi.Size(), int64(page)))
	}
	mem, err := syscall.Mmap(int(f.Fd()), 0, page, syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("mapping %s: %w", path, err)
	}
	d := &mappedDevice{path: path, mem: mem, size: size}
	if fi.Mode().IsRegular() {
		d.file = f
	} else {
		f.Close() // the mapping outlives the descriptor
	}
	return d, nil
}

// Read reads the page under its seqlock. A file that shrank is an error
// (ErrTruncated) before the read, and a fault during the read (it shrank
// meanwhile) is one too, not a crash.
func (d *mappedDevice) Read() (Page, error) {
	if d.file != nil {
		fi, err := d.file.Stat()
		if err != nil {
			return Page{}, fmt.Errorf("reading %s: %w", d.path, err)
		}
		if fi.Size() < int64(d.size) {
			return Page{}, fmt.Errorf("reading %s: the file shrank from %d to %d bytes under the mapping: %w", d.path, d.size, fi.Size(), ErrTruncated)
		}
	}
	p, err := ReadMapped(d.mem[:d.size])
	if err != nil {
		return Page{}, fmt.Errorf("reading %s: %w", d.path, err)
	}
	return p, nil
}

// Close unmaps the page.
func (d *mappedDevice) Close() error {
	if d.file != nil {
		d.file.Close()
		d.file = nil
	}
	if d.mem == nil {
		return nil
	}
	err := syscall.Munmap(d.mem)
	d.mem = nil
	return err
}
