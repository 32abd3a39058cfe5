package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"time"

	"github.com/clockwatch/clockwatch/test/vm/guest"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	fl := flag.NewFlagSet("sockwatch", flag.ContinueOnError)
	fl.SetOutput(stderr)
	socket := fl.String("socket", "/run/clockwatch/stepdown.sock", "clockwatch's stepdown socket")
	out := fl.String("out", "", "file the received lines are appended to")
	tag := fl.String("tag", "", "tag of the result lines, to tell several subscribers apart")
	watchPeer := fl.String("watch-peer", "", "a peer whose clock to follow too (watch_peer)")
	if err := fl.Parse(args); err != nil {
		return 2
	}
	if err := guest.CheckTestVM(os.DirFS("/")); err != nil {
		fmt.Fprintf(stderr, "sockwatch: refusing to run: %v\n", err)
		return 3
	}
	if err := watch(*socket, *out, *tag, *watchPeer, stdout); err != nil {
		fmt.Fprintf(stderr, "sockwatch: %v\n", err)
		return 1
	}
	return 0
}

func watch(socket, out, tag, watchPeer string, stdout io.Writer) error {
	var conn net.Conn
	var err error
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if conn, err = net.Dial("unix", socket); err == nil {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("connecting to %s: %w", socket, err)
		}
	}
	defer conn.Close()
	if watchPeer != "" {
		req, _ := json.Marshal(map[string]string{"type": "watch_peer", "peer": watchPeer})
		if _, err := conn.Write(append(req, '\n')); err != nil {
			return fmt.Errorf("asking to watch %s: %w", watchPeer, err)
		}
	}
	var file *os.File
	if out != "" {
		if file, err = os.OpenFile(out, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644); err != nil {
			return fmt.Errorf("opening %s: %w", out, err)
		}
		defer file.Close()
	}
	sc := bufio.NewScanner(conn)
	for sc.Scan() {
		mono := guest.Mono()
		line := bytes.TrimSpace(sc.Bytes())
		var head struct {
			Type string `json:"type"`
		}
		if err := json.Unmarshal(line, &head); err != nil {
			return fmt.Errorf("bad line from the server %q: %w", line, err)
		}
		if head.Type == "heartbeat" {
			continue
		}
		if err := guest.Emit(stdout, guest.KindStepdownMsg, guest.StepdownMsg{Tag: tag, ReceivedMonoNS: mono, Message: json.RawMessage(line)}); err != nil {
			return err
		}
		if file != nil {
			if _, err := file.Write(append(line, '\n')); err != nil {
				return fmt.Errorf("writing %s: %w", out, err)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("reading %s: %w", socket, err)
	}
	return nil
}
