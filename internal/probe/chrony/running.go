package chrony

import (
	"bytes"
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"strings"

	"github.com/clockwatch/clockwatch/internal/safefile"
)

// DefaultPIDFile is where Debian's and Red Hat's chronyd write their PID
// (chrony's compiled-in /var/run/chrony/chronyd.pid; /var/run is /run).
const DefaultPIDFile = "/run/chrony/chronyd.pid"

// RunningConf finds the chronyd that runs on this machine in proc (a view of
// /proc: os.DirFS("/proc")) and the configuration file it reads: the
// argument of its -f option, else def (chronyd's compiled-in default, as
// chrony.conf_path configures it). running is false when no chronyd runs:
// then nothing is to be audited. The chronyd is the one whose PID the
// pidFile holds (the system's: DefaultPIDFile); without one, of several
// chronyd processes (a test instance beside the system's), the lowest PID.
func RunningConf(proc fs.FS, pidFile, def string) (path string, running bool, err error) {
	entries, err := fs.ReadDir(proc, ".")
	if err != nil {
		return "", false, fmt.Errorf("looking for chronyd in /proc: %w", err)
	}
	var pids []int
	for _, e := range entries {
		if pid, err := strconv.Atoi(e.Name()); err == nil && e.IsDir() {
			pids = append(pids, pid)
		}
	}
	slices.Sort(pids)
	// Through safefile: a FIFO or a link to /dev/zero in the pid file's
	// place must not hang or flood the status.
	if b, err := safefile.Read(safefile.Spec{What: "chronyd's pid file", Limit: 64, Links: safefile.LinksWithinDir}, pidFile); err == nil {
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			pids = append([]int{pid}, pids...) // tried first; a stale file names no chronyd
		}
	}
	for _, pid := range pids {
		comm, err := fs.ReadFile(proc, strconv.Itoa(pid)+"/comm")
		if err != nil || strings.TrimSpace(string(comm)) != "chronyd" {
			continue // gone meanwhile, or another program
		}
		cmdline, err := fs.ReadFile(proc, strconv.Itoa(pid)+"/cmdline")
		if err != nil {
			continue
		}
		return confArg(cmdline, def), true, nil
	}
	return "", false, nil
}

// confArg returns the file chronyd's command line (NUL-separated) names with
// -f FILE or -fFILE, else def. chronyd parses its options with getopt, so
// options stop at "--" and a later -f wins.
func confArg(cmdline []byte, def string) string {
	args := strings.Split(string(bytes.TrimRight(cmdline, "\x00")), "\x00")
	path := def
	for i := 1; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return path
		case a == "-f" && i+1 < len(args):
			path = args[i+1]
			i++
		case strings.HasPrefix(a, "-f") && len(a) > 2:
			path = a[2:]
		}
	}
	return path
}
