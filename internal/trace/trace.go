package trace

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/clockwatch/clockwatch/internal/kernel"
)

// MaxLineBytes is the longest line a Reader accepts.
const MaxLineBytes = 64 << 10

// Line is one line of a trace: a sample, or a clock-set mark (ClockSet true,
// with only Sample.Mono set).
type Line struct {
	Sample   kernel.Sample
	ClockSet bool
}

// LineError is a problem with one line of a trace.
type LineError struct {
	// Line is the 1-based line number.
	Line int
	// Err is the problem.
	Err error
}

func (e *LineError) Error() string { return fmt.Sprintf("trace line %d: %v", e.Line, e.Err) }

func (e *LineError) Unwrap() error { return e.Err }

// Reader reads a trace line by line, validating each.
type Reader struct {
	sc         *bufio.Scanner
	line       int
	lastSample int64
	lastMark   int64
	haveSample bool
	haveMark   bool
}

// NewReader returns a Reader of r.
func NewReader(r io.Reader) *Reader {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), MaxLineBytes)
	return &Reader{sc: sc}
}

// lineJSON is the decoding shape of a line. Pointers tell a missing member
// from a zero one.
type lineJSON struct {
	Mono     *int64 `json:"mono_ns"`
	Boot     *int64 `json:"boot_ns"`
	Real     *int64 `json:"real_ns"`
	Raw      *int64 `json:"raw_ns"`
	TAI      *int64 `json:"tai_ns"`
	Window   *int64 `json:"window_ns"`
	ClockSet *bool  `json:"clock_set"`
}

// Next returns the next line, skipping blank ones. At the end it returns
// io.EOF; a bad line gives a *LineError.
func (r *Reader) Next() (Line, error) {
	for r.sc.Scan() {
		r.line++
		b := bytes.TrimSpace(r.sc.Bytes())
		if len(b) == 0 {
			continue
		}
		l, err := r.parse(b)
		if err != nil {
			return Line{}, &LineError{Line: r.line, Err: err}
		}
		return l, nil
	}
	if err := r.sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return Line{}, &LineError{Line: r.line + 1, Err: fmt.Errorf("longer than %d bytes", MaxLineBytes)}
		}
		return Line{}, fmt.Errorf("reading trace after line %d: %w", r.line, err)
	}
	return Line{}, io.EOF
}

// The bounds of a sample's values: a clock reading past MaxClockNs (2^62 ns,
// 146 years of uptime, or REALTIME in 2116) or a read window over an hour is
// no kernel's, and would overflow the detector's differences.
const (
	MaxClockNs  = 1 << 62
	MaxWindowNs = int64(time.Hour)
)

func (r *Reader) parse(b []byte) (Line, error) {
	if b[0] != '{' {
		return Line{}, errors.New("not a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var j lineJSON
	if err := dec.Decode(&j); err != nil {
		return Line{}, fmt.Errorf("not valid JSON: %w", err)
	}
	if dec.More() {
		return Line{}, errors.New("more than one JSON value on the line")
	}
	if j.Mono == nil {
		return Line{}, errors.New("missing mono_ns")
	}
	if *j.Mono < 0 {
		return Line{}, fmt.Errorf("mono_ns must not be negative, got %d", *j.Mono)
	}
	if j.ClockSet != nil {
		if !*j.ClockSet {
			return Line{}, errors.New(`clock_set must be true when present (a sample has no clock_set member)`)
		}
		if j.Boot != nil || j.Real != nil || j.Raw != nil || j.TAI != nil || j.Window != nil {
			return Line{}, errors.New("a clock_set mark has only mono_ns")
		}
		if r.haveMark && *j.Mono < r.lastMark {
			return Line{}, fmt.Errorf("non-monotonic mono_ns: clock_set mark at %d is before the previous mark's %d", *j.Mono, r.lastMark)
		}
		r.lastMark, r.haveMark = *j.Mono, true
		return Line{Sample: kernel.Sample{Mono: *j.Mono}, ClockSet: true}, nil
	}
	switch {
	case j.Boot == nil:
		return Line{}, errors.New("sample without boot_ns")
	case j.Real == nil:
		return Line{}, errors.New("sample without real_ns")
	case j.Window != nil && *j.Window < 0:
		return Line{}, fmt.Errorf("window_ns must not be negative, got %d", *j.Window)
	case j.Window != nil && *j.Window > MaxWindowNs:
		return Line{}, fmt.Errorf("window_ns %d is over %d (an hour): no clock read takes that long", *j.Window, MaxWindowNs)
	case *j.Mono > MaxClockNs:
		return Line{}, fmt.Errorf("mono_ns %d is over %d (2^62, 146 years): no kernel reads that", *j.Mono, int64(MaxClockNs))
	case *j.Boot < 0 || *j.Boot > MaxClockNs:
		return Line{}, fmt.Errorf("boot_ns %d is outside 0..2^62: no kernel reads that", *j.Boot)
	case *j.Real < 0 || *j.Real > MaxClockNs:
		return Line{}, fmt.Errorf("real_ns %d is outside 0..2^62 (1970 to 2116): no kernel reads that", *j.Real)
	case j.Raw != nil && (*j.Raw < 0 || *j.Raw > MaxClockNs):
		return Line{}, fmt.Errorf("raw_ns %d is outside 0..2^62: no kernel reads that", *j.Raw)
	case j.TAI != nil && (*j.TAI < 0 || *j.TAI > MaxClockNs):
		return Line{}, fmt.Errorf("tai_ns %d is outside 0..2^62: no kernel reads that", *j.TAI)
	case r.haveSample && *j.Mono <= r.lastSample:
		return Line{}, fmt.Errorf("non-monotonic mono_ns: sample at %d is not after the previous sample's %d", *j.Mono, r.lastSample)
	}
	r.lastSample, r.haveSample = *j.Mono, true
	s := kernel.Sample{Mono: *j.Mono, Boot: *j.Boot, Real: *j.Real}
	if j.Raw != nil {
		s.Raw = *j.Raw
	}
	if j.TAI != nil {
		s.TAI = *j.TAI
	}
	if j.Window != nil {
		s.Window = *j.Window
	}
	return Line{Sample: s}, nil
}

// Writer writes a trace. It reuses one buffer: writing a line does not
// allocate.
type Writer struct {
	w   io.Writer
	buf []byte
}

// NewWriter returns a Writer to w. Each line is one Write call.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w, buf: make([]byte, 0, 256)} }

// Sample writes a sample line. Raw, TAI and Window are written when not zero.
func (w *Writer) Sample(s kernel.Sample) error {
	b := append(w.buf[:0], `{"mono_ns":`...)
	b = strconv.AppendInt(b, s.Mono, 10)
	b = append(b, `,"boot_ns":`...)
	b = strconv.AppendInt(b, s.Boot, 10)
	b = append(b, `,"real_ns":`...)
	b = strconv.AppendInt(b, s.Real, 10)
	if s.Raw != 0 {
		b = append(b, `,"raw_ns":`...)
		b = strconv.AppendInt(b, s.Raw, 10)
	}
	if s.TAI != 0 {
		b = append(b, `,"tai_ns":`...)
		b = strconv.AppendInt(b, s.TAI, 10)
	}
	if s.Window != 0 {
		b = append(b, `,"window_ns":`...)
		b = strconv.AppendInt(b, s.Window, 10)
	}
	b = append(b, "}\n"...)
	w.buf = b
	_, err := w.w.Write(b)
	return err
}

// ClockSet writes a clock-set mark line.
func (w *Writer) ClockSet(monoNs int64) error {
	b := append(w.buf[:0], `{"mono_ns":`...)
	b = strconv.AppendInt(b, monoNs, 10)
	b = append(b, `,"clock_set":true}`+"\n"...)
	w.buf = b
	_, err := w.w.Write(b)
	return err
}
