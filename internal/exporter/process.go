package exporter

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sys/unix"
)

// ProcessCollector exports the standard process_* metrics (the same names,
// types and help as client_golang's process collector, which users' alerts
// and dashboards know) for this process, for a fraction of the cost: CPU time
// from getrusage and limits from getrlimit instead of parsing
// /proc/self/stat and /proc/self/limits, memory from the short
// /proc/self/statm, open descriptors counted with getdents into a reused
// buffer, and the start time read once. The network counters come from
// /proc/self/net/netstat, which the kernel formats in full (hundreds of
// fields) for every read: that alone was 9 % of a scrape's CPU, so it is read
// at most every NetstatMaxAge.
type ProcessCollector struct {
	cpu, openFDs, maxFDs, vsize, maxVsize, rss, start, inBytes, outBytes *prometheus.Desc

	startTime float64
	pageSize  float64

	mu        sync.Mutex
	dirent    []byte
	statm     []byte
	netstat   []byte
	netAt     time.Time
	in, out   float64
	netErr    error
	netMaxAge time.Duration
	now       func() time.Time
}

// NetstatMaxAge is how long ProcessCollector reuses the network counters
// it read from /proc/self/net/netstat.
const NetstatMaxAge = 5 * time.Second

var _ prometheus.Collector = (*ProcessCollector)(nil)

// NewProcessCollector returns the collector for this process.
func NewProcessCollector() *ProcessCollector {
	c := &ProcessCollector{
		cpu:      desc("process_cpu_seconds_total", "Total user and system CPU time spent in seconds."),
		openFDs:  desc("process_open_fds", "Number of open file descriptors."),
		maxFDs:   desc("process_max_fds", "Maximum number of open file descriptors."),
		vsize:    desc("process_virtual_memory_bytes", "Virtual memory size in bytes."),
		maxVsize: desc("process_virtual_memory_max_bytes", "Maximum amount of virtual memory available in bytes."),
		rss:      desc("process_resident_memory_bytes", "Resident memory size in bytes."),
		start:    desc("process_start_time_seconds", "Start time of the process since unix epoch in seconds."),
		inBytes:  desc("process_network_receive_bytes_total", "Number of bytes received by the process over the network."),
		outBytes: desc("process_network_transmit_bytes_total", "Number of bytes sent by the process over the network."),

		pageSize:  float64(os.Getpagesize()),
		dirent:    make([]byte, 8192),
		statm:     make([]byte, 128),
		netstat:   make([]byte, 0, 8192),
		netMaxAge: NetstatMaxAge,
		now:       time.Now,
	}
	c.startTime = processStartTime()
	return c
}

// Describe implements prometheus.Collector.
func (c *ProcessCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.cpu, c.openFDs, c.maxFDs, c.vsize, c.maxVsize, c.rss, c.start, c.inBytes, c.outBytes} {
		ch <- d
	}
}

// Collect implements prometheus.Collector. A figure that cannot be read is
// left out, as client_golang's collector does by default.
func (c *ProcessCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	b := newMetricBatch(9)
	gauge := func(d *prometheus.Desc, v float64) { ch <- b.next(d, prometheus.GaugeValue, v, nil) }
	var ru unix.Rusage
	if unix.Getrusage(unix.RUSAGE_SELF, &ru) == nil {
		ch <- b.next(c.cpu, prometheus.CounterValue, float64(ru.Utime.Nano()+ru.Stime.Nano())/1e9, nil)
	}
	if size, res, err := c.readStatm(); err == nil {
		gauge(c.vsize, size*c.pageSize)
		gauge(c.rss, res*c.pageSize)
	}
	if c.startTime > 0 {
		gauge(c.start, c.startTime)
	}
	if n, err := c.countFDs(); err == nil {
		gauge(c.openFDs, float64(n))
	}
	var lim unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_NOFILE, &lim) == nil {
		gauge(c.maxFDs, float64(lim.Cur))
	}
	if unix.Getrlimit(unix.RLIMIT_AS, &lim) == nil {
		gauge(c.maxVsize, float64(lim.Cur))
	}
	if now := c.now(); c.netAt.IsZero() || now.Sub(c.netAt) >= c.netMaxAge {
		c.in, c.out, c.netErr = c.readNetstat()
		c.netAt = now
	}
	if c.netErr == nil {
		ch <- b.next(c.inBytes, prometheus.CounterValue, c.in, nil)
		ch <- b.next(c.outBytes, prometheus.CounterValue, c.out, nil)
	}
}

// readStatm returns the sizes in pages from /proc/self/statm ("size
// resident shared text lib data dt").
func (c *ProcessCollector) readStatm() (size, resident float64, err error) {
	n, err := readInto("/proc/self/statm", c.statm)
	if err != nil {
		return 0, 0, err
	}
	f := bytes.Fields(c.statm[:n])
	if len(f) < 2 {
		return 0, 0, fmt.Errorf("/proc/self/statm: %d fields, want at least 2", len(f))
	}
	s, err1 := strconv.ParseUint(string(f[0]), 10, 64)
	r, err2 := strconv.ParseUint(string(f[1]), 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, 0, fmt.Errorf("/proc/self/statm: %w", err)
	}
	return float64(s), float64(r), nil
}

// countFDs counts the entries of /proc/self/fd, less "." and ".." and the
// descriptor used to read it.
func (c *ProcessCollector) countFDs() (int, error) {
	fd, err := unix.Open("/proc/self/fd", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, fmt.Errorf("opening /proc/self/fd: %w", err)
	}
	defer unix.Close(fd)
	count := 0
	for {
		n, err := unix.Getdents(fd, c.dirent)
		if err != nil {
			return 0, fmt.Errorf("reading /proc/self/fd: %w", err)
		}
		if n <= 0 {
			break
		}
		for buf := c.dirent[:n]; len(buf) > 0; {
			// struct linux_dirent64: ino u64, off s64, reclen u16, type u8, name.
			reclen := int(buf[16]) | int(buf[17])<<8
			if reclen == 0 || reclen > len(buf) {
				break
			}
			if name := buf[19:reclen]; !(name[0] == '.' && (name[1] == 0 || name[1] == '.' && name[2] == 0)) {
				count++
			}
			buf = buf[reclen:]
		}
	}
	return count - 1, nil // the descriptor reading the directory
}

// readNetstat returns IpExt's InOctets and OutOctets from
// /proc/self/net/netstat (a header line of names, then a line of values).
func (c *ProcessCollector) readNetstat() (in, out float64, err error) {
	f, err := os.Open("/proc/self/net/netstat")
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	buf := c.netstat[:0]
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, rerr := f.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if rerr != nil || n == 0 {
			break
		}
	}
	c.netstat = buf
	var names []byte
	for line := range bytes.SplitSeq(buf, []byte("\n")) {
		if !bytes.HasPrefix(line, []byte("IpExt:")) {
			continue
		}
		if names == nil {
			names = line
			continue
		}
		ns, vs := bytes.Fields(names), bytes.Fields(line)
		found := 0
		for i := 1; i < len(ns) && i < len(vs); i++ {
			var dst *float64
			switch string(ns[i]) {
			case "InOctets":
				dst = &in
			case "OutOctets":
				dst = &out
			default:
				continue
			}
			v, perr := strconv.ParseFloat(string(vs[i]), 64)
			if perr != nil {
				return 0, 0, fmt.Errorf("/proc/self/net/netstat: IpExt %s: %w", ns[i], perr)
			}
			*dst = v
			found++
		}
		if found < 2 {
			return 0, 0, errors.New("/proc/self/net/netstat: no IpExt InOctets and OutOctets")
		}
		return in, out, nil
	}
	return 0, 0, errors.New("/proc/self/net/netstat: no IpExt lines")
}

// processStartTime is when this process started, in seconds since the
// epoch, from /proc/self/stat's starttime (clock ticks since boot) and
// /proc/stat's btime; 0 when it cannot be read.
func processStartTime() float64 {
	stat, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return 0
	}
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0
	}
	// After "pid (comm) ", starttime is field 22, the 20th after comm.
	f := bytes.Fields(stat[i+1:])
	if len(f) < 20 {
		return 0
	}
	ticks, err := strconv.ParseUint(string(f[19]), 10, 64)
	if err != nil {
		return 0
	}
	sys, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	for line := range bytes.SplitSeq(sys, []byte("\n")) {
		if v, ok := bytes.CutPrefix(line, []byte("btime ")); ok {
			btime, err := strconv.ParseUint(string(bytes.TrimSpace(v)), 10, 64)
			if err != nil {
				return 0
			}
			return float64(btime) + float64(ticks)/userHZ
		}
	}
	return 0
}

// userHZ is the unit of /proc's clock ticks: 100 on every Linux
// architecture Go supports (sysconf(_SC_CLK_TCK)).
const userHZ = 100

// readInto reads a small file into buf with one read.
func readInto(path string, buf []byte) (int, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, fmt.Errorf("opening %s: %w", path, err)
	}
	defer unix.Close(fd)
	n, err := unix.Read(fd, buf)
	if err != nil {
		return 0, fmt.Errorf("reading %s: %w", path, err)
	}
	return n, nil
}
