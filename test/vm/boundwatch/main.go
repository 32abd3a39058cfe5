package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/clockwatch/clockwatch/stepdown/boundedtime"
	"github.com/clockwatch/clockwatch/test/vm/guest"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	fl := flag.NewFlagSet("boundwatch", flag.ContinueOnError)
	fl.SetOutput(stderr)
	path := fl.String("path", boundedtime.DefaultPath, "the segment")
	out := fl.String("out", "", "file the status changes are appended to")
	if err := fl.Parse(args); err != nil {
		return 2
	}
	if err := guest.CheckTestVM(os.DirFS("/")); err != nil {
		fmt.Fprintf(stderr, "boundwatch: refusing to run: %v\n", err)
		return 3
	}
	if err := watch(*path, *out, stdout); err != nil {
		fmt.Fprintf(stderr, "boundwatch: %v\n", err)
		return 1
	}
	return 0
}

func watch(path, out string, stdout io.Writer) error {
	var r *boundedtime.Reader
	var err error
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if r, err = boundedtime.Open(path); err == nil {
			break
		}
		if time.Now().After(deadline) {
			return err
		}
	}
	defer r.Close()
	file, err := os.OpenFile(out, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("opening %s: %w", out, err)
	}
	defer file.Close()
	last := ""
	var lastMarker uint64
	for ; ; time.Sleep(time.Millisecond) {
		e, l, st, err := r.Now()
		mono := guest.Mono()
		if err != nil {
			return err
		}
		snap, _ := r.Snapshot()
		if st.String() == last && snap.DisruptionMarker == lastMarker {
			continue
		}
		last, lastMarker = st.String(), snap.DisruptionMarker
		s := guest.BoundStatus{Status: last, MonoNS: mono, BoundNS: int64(l.Sub(e) / 2), Generation: snap.Generation,
			Marker: snap.DisruptionMarker, VMClock: snap.DisruptionSupport}
		if err := guest.Emit(stdout, guest.KindBoundStatus, s); err != nil {
			return err
		}
		line, _ := json.Marshal(s)
		if _, err := file.Write(append(line, '\n')); err != nil {
			return fmt.Errorf("writing %s: %w", out, err)
		}
	}
}
