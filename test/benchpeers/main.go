package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/clockwatch/clockwatch/internal/ntptest"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// target is one exporter under measurement.
type target struct {
	name string
	args []string
	port int
	cmd  *exec.Cmd
	url  string

	idleCPU           time.Duration
	idleRuns          int64 // times a thread was scheduled in while idle
	rssStart, rssEnd  int64 // kB
	rssMax            int64
	perScrape         []time.Duration // server CPU per scrape, one per block
	chronydPerScrape  []time.Duration
	lat               []time.Duration
	bytes             int
	concSeq, concPar  time.Duration // CPU per scrape, sequential and 2 concurrent
	refused, scrapes  int
	seriesOwn, series int
	// clockwatch_chrony_polls_total and clockwatch_step_samples_total over
	// the idle window.
	idlePolls [2]float64
}

type options struct {
	clockwatch, clockwatchBefore, nodeExporter, chronyExporter string
	sources, block, rounds                                     int
	idle                                                       time.Duration
	interval                                                   time.Duration
	ntpPoll                                                    string
	keep                                                       bool
	noStepdown                                                 bool
	// variants are extra runs of the clockwatch binary, each with a name
	// and YAML appended to its configuration.
	variants []variant
}

// variant is one -variant flag: name=yaml.
// variant is an extra run of the clockwatch binary: YAML appended to its
// configuration and command-line flags (the lines starting with "--").
type variant struct {
	name, yaml string
	flags      []string
}

// variantFlag collects -variant flags.
type variantFlag struct{ vs *[]variant }

func (f variantFlag) String() string { return "" }

func (f variantFlag) Set(s string) error {
	name, yaml, ok := strings.Cut(s, "=")
	if !ok || name == "" || yaml == "" {
		return fmt.Errorf("want name=yaml (e.g. 'no ptp=ptp: {enabled: false}'), got %q", s)
	}
	v := variant{name: name}
	for _, l := range strings.Split(strings.ReplaceAll(yaml, `\n`, "\n"), "\n") {
		if strings.HasPrefix(l, "--") {
			v.flags = append(v.flags, l)
		} else {
			v.yaml += l + "\n"
		}
	}
	*f.vs = append(*f.vs, v)
	return nil
}

func run(args []string, stdout, stderr io.Writer) int {
	fl := flag.NewFlagSet("benchpeers", flag.ContinueOnError)
	fl.SetOutput(stderr)
	var o options
	fl.StringVar(&o.clockwatch, "clockwatch", "", "clockwatch binary (required)")
	fl.StringVar(&o.clockwatchBefore, "clockwatch-before", "", "a second clockwatch binary to measure in the same run (an older build)")
	fl.StringVar(&o.nodeExporter, "node-exporter", "", "node_exporter binary (required)")
	fl.StringVar(&o.chronyExporter, "chrony-exporter", "", "SuperQ/chrony_exporter binary (optional)")
	fl.IntVar(&o.sources, "sources", 8, "NTP sources chronyd is given")
	fl.IntVar(&o.block, "block", 500, "scrapes per block")
	fl.IntVar(&o.rounds, "rounds", 3, "blocks per exporter (interleaved)")
	fl.DurationVar(&o.idle, "idle", 120*time.Second, "idle window")
	fl.DurationVar(&o.interval, "interval", 50*time.Millisecond, "time from one scrape's start to the next in a block (each scraper's; 0: back to back). "+
		"50 ms stays under clockwatch's HTTP pace (32 requests a second) and makes each scrape a wake-up, as Prometheus's are")
	fl.StringVar(&o.ntpPoll, "ntp-poll", "iburst", "options of each chrony.conf server line (chrony's defaults: minpoll 6, maxpoll 10)")
	fl.BoolVar(&o.keep, "keep", false, "keep the temporary directory")
	fl.BoolVar(&o.noStepdown, "no-stepdown", false, "also run the clockwatch binary with stepdown.enabled: false (what the stepdown server costs idle)")
	fl.Var(variantFlag{&o.variants}, "variant", "also run the clockwatch binary with this YAML appended to its configuration: name=yaml (\\n for a newline; lines starting with -- are command-line flags); repeatable")
	if err := fl.Parse(args); err != nil {
		return 2
	}
	if o.clockwatch == "" || o.nodeExporter == "" {
		fmt.Fprintln(stderr, "benchpeers: -clockwatch and -node-exporter are required")
		return 2
	}
	if err := bench(o, stdout, stderr); err != nil {
		fmt.Fprintf(stderr, "benchpeers: %v\n", err)
		return 1
	}
	return 0
}

func bench(o options, stdout, stderr io.Writer) error {
	dir, err := os.MkdirTemp("", "benchpeers-")
	if err != nil {
		return err
	}
	if !o.keep {
		defer os.RemoveAll(dir)
	}
	// chronyd refuses a socket directory that others can write to.
	if err := os.Chmod(dir, 0o700); err != nil {
		return err
	}
	ch, err := startChronyd(dir, o)
	if err != nil {
		return err
	}
	defer ch.stop()
	fmt.Fprintf(stderr, "chronyd pid %d, waiting until it is synchronised to its %d sources\n", ch.cmd.Process.Pid, o.sources)
	if err := ch.waitSynced(o.sources, 90*time.Second); err != nil {
		return err
	}

	var targets []*target
	add := func(name string, args []string) {
		targets = append(targets, &target{name: name, args: args})
	}
	cwConf := filepath.Join(dir, "clockwatch.yml")
	base := fmt.Sprintf("chrony:\n  address: %s\n  conf_path: %s\n", ch.socket, ch.conf)
	// Its chronyd's pid file, as /run/chrony/chronyd.pid is on a host: the
	// exit watched, the polls follow chronyd's updates. The older build
	// (BEFORE) gets the base: it may not know the key.
	conf := base + fmt.Sprintf("  pid_file: %s\n", ch.pidFile)
	if err := os.WriteFile(cwConf, []byte(conf), 0o600); err != nil {
		return err
	}
	beforeConf := filepath.Join(dir, "clockwatch-before.yml")
	if err := os.WriteFile(beforeConf, []byte(base), 0o600); err != nil {
		return err
	}
	add("clockwatch", []string{o.clockwatch, "--config.file=" + cwConf, "--log.level=warn"})
	if o.noStepdown {
		off := filepath.Join(dir, "clockwatch-no-stepdown.yml")
		if err := os.WriteFile(off, []byte(conf+"stepdown:\n  enabled: false\n"), 0o600); err != nil {
			return err
		}
		add("clockwatch (stepdown off)", []string{o.clockwatch, "--config.file=" + off, "--log.level=warn"})
	}
	for i, v := range o.variants {
		f := filepath.Join(dir, fmt.Sprintf("clockwatch-variant-%d.yml", i))
		if err := os.WriteFile(f, []byte(conf+v.yaml), 0o600); err != nil {
			return err
		}
		add("clockwatch ("+v.name+")", append([]string{o.clockwatch, "--config.file=" + f, "--log.level=warn"}, v.flags...))
	}
	if o.clockwatchBefore != "" {
		add("clockwatch@before", []string{o.clockwatchBefore, "--config.file=" + beforeConf, "--log.level=warn"})
	}
	add("node_exporter", []string{o.nodeExporter, "--collector.disable-defaults", "--collector.timex", "--collector.time", "--log.level=warn"})
	if o.chronyExporter != "" {
		add("chrony_exporter", []string{o.chronyExporter, "--chrony.address=unix://" + ch.socket,
			"--collector.sources", "--collector.sourcestats", "--no-collector.dns-lookups", "--log.level=warn"})
	}
	for i, t := range targets {
		if err := t.start(dir, i, stderr); err != nil {
			return err
		}
		defer t.stop()
	}
	client := &http.Client{Transport: &http.Transport{DisableCompression: true, MaxIdleConnsPerHost: 4}, Timeout: 10 * time.Second}
	// Warm up: first scrapes build caches, name lookups, connections.
	for _, t := range targets {
		for range 50 {
			if _, _, err := t.scrape(client); err != nil {
				return fmt.Errorf("%s: %w", t.name, err)
			}
		}
		body, _, _ := t.scrape(client)
		t.bytes = len(body)
		for _, l := range strings.Split(string(body), "\n") {
			if l == "" || l[0] == '#' {
				continue
			}
			t.series++
			if !strings.HasPrefix(l, "go_") && !strings.HasPrefix(l, "process_") && !strings.HasPrefix(l, "promhttp_") {
				t.seriesOwn++
			}
		}
	}
	load0 := loadavg()
	start := time.Now()
	fmt.Fprintf(stderr, "idle window %s (load %s)\n", o.idle, load0)
	time.Sleep(5 * time.Second) // let the warm-up's garbage be collected
	counters := func(t *target) [2]float64 {
		body, _, _ := t.scrape(client)
		var v [2]float64
		for _, l := range strings.Split(string(body), "\n") {
			for i, name := range []string{"clockwatch_chrony_polls_total ", "clockwatch_step_samples_total "} {
				if strings.HasPrefix(l, name) {
					v[i], _ = strconv.ParseFloat(strings.TrimPrefix(l, name), 64)
				}
			}
		}
		return v
	}
	for _, t := range targets {
		t.idlePolls = counters(t)
	}
	time.Sleep(time.Second)
	cpu0 := make([]time.Duration, len(targets))
	runs0 := make([]int64, len(targets))
	for i, t := range targets {
		cpu0[i] = procCPU(t.pid())
		runs0[i] = procRuns(t.pid())
		t.rssStart = rss(t.pid())
		t.rssMax = t.rssStart
	}
	for end := time.Now().Add(o.idle); time.Now().Before(end); {
		time.Sleep(min(5*time.Second, time.Until(end)))
		for _, t := range targets {
			t.rssMax = max(t.rssMax, rss(t.pid()))
		}
	}
	for i, t := range targets {
		t.idleCPU = procCPU(t.pid()) - cpu0[i]
		t.idleRuns = procRuns(t.pid()) - runs0[i]
		t.rssEnd = rss(t.pid())
		c := counters(t)
		t.idlePolls = [2]float64{c[0] - t.idlePolls[0], c[1] - t.idlePolls[1]}
	}
	load1 := loadavg()
	fmt.Fprintf(stderr, "scrapes: %d rounds of %d per exporter (load %s)\n", o.rounds, o.block, load1)
	for range o.rounds {
		for _, t := range targets {
			c0, h0 := procCPU(t.pid()), procCPU(ch.cmd.Process.Pid)
			for range o.block {
				t0 := time.Now()
				if _, code, err := t.scrape(client); err != nil || code != http.StatusOK {
					return fmt.Errorf("%s: scrape: %v (status %d)", t.name, err, code)
				}
				t.lat = append(t.lat, time.Since(t0))
				time.Sleep(time.Until(t0.Add(o.interval)))
			}
			t.perScrape = append(t.perScrape, (procCPU(t.pid())-c0)/time.Duration(o.block))
			t.chronydPerScrape = append(t.chronydPerScrape, (procCPU(ch.cmd.Process.Pid)-h0)/time.Duration(o.block))
		}
	}
	// Two scrapers at once (an HA pair of Prometheus servers) against one.
	for _, t := range targets {
		c0 := procCPU(t.pid())
		for range o.block {
			t0 := time.Now()
			t.scrape(client)
			time.Sleep(time.Until(t0.Add(o.interval)))
		}
		t.concSeq = (procCPU(t.pid()) - c0) / time.Duration(o.block)
		c1 := procCPU(t.pid())
		var wg sync.WaitGroup
		var mu sync.Mutex
		for range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				cl := &http.Client{Transport: &http.Transport{DisableCompression: true}, Timeout: 10 * time.Second}
				for range o.block / 2 {
					// Two scrapers, each at half the rate: the same
					// scrapes a second as one.
					t0 := time.Now()
					_, code, err := t.scrape(cl)
					time.Sleep(time.Until(t0.Add(2 * o.interval)))
					mu.Lock()
					t.scrapes++
					if err != nil || code != http.StatusOK {
						t.refused++
					}
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		t.concPar = (procCPU(t.pid()) - c1) / time.Duration(2*(o.block/2))
	}
	load2 := loadavg()
	report(stdout, o, targets, start, load0, load1, load2)
	return nil
}

func report(w io.Writer, o options, ts []*target, start time.Time, load0, load1, load2 string) {
	ref := ts[0]
	for _, t := range ts {
		if t.name == "node_exporter" {
			ref = t
		}
	}
	fmt.Fprintf(w, "benchpeers %s, %d NTP sources (%s), idle %s, %d rounds × %d keep-alive scrapes, one every %s\n",
		start.UTC().Format("2006-01-02 15:04 MST"), o.sources, o.ntpPoll, o.idle, o.rounds, o.block, o.interval)
	fmt.Fprintf(w, "load average: before idle %s; after idle %s; after scrapes %s\n\n", load0, load1, load2)
	fmt.Fprintf(w, "| measure |")
	for _, t := range ts {
		fmt.Fprintf(w, " %s |", t.name)
	}
	fmt.Fprintf(w, "\n|---|")
	for range ts {
		fmt.Fprintf(w, "---|")
	}
	fmt.Fprintln(w)
	row := func(name string, f func(t *target) string) {
		fmt.Fprintf(w, "| %s |", name)
		for _, t := range ts {
			fmt.Fprintf(w, " %s |", f(t))
		}
		fmt.Fprintln(w)
	}
	pct := func(d time.Duration) float64 { return float64(d) / float64(o.idle) * 100 }
	row(fmt.Sprintf("idle CPU, %s", o.idle), func(t *target) string {
		return fmt.Sprintf("%.3f %% of a core", pct(t.idleCPU))
	})
	row("thread wake-ups per second while idle", func(t *target) string {
		return fmt.Sprintf("%.1f", float64(t.idleRuns)/o.idle.Seconds())
	})
	row("chrony polls / clock samples while idle", func(t *target) string {
		if !strings.HasPrefix(t.name, "clockwatch") {
			return "-"
		}
		return fmt.Sprintf("%.0f / %.0f", t.idlePolls[0], t.idlePolls[1])
	})
	row("server CPU per scrape (blocks)", func(t *target) string {
		return fmt.Sprintf("%s (×%.2f)", durRange(t.perScrape), median(t.perScrape).Seconds()/median(ref.perScrape).Seconds())
	})
	row("chronyd CPU per scrape", func(t *target) string { return durRange(t.chronydPerScrape) })
	row("scrape p50 / p99", func(t *target) string {
		return fmt.Sprintf("%s / %s", ms(quantile(t.lat, 0.5)), ms(quantile(t.lat, 0.99)))
	})
	row(fmt.Sprintf("RSS idle %s (start → end, max)", o.idle), func(t *target) string {
		return fmt.Sprintf("%.1f → %.1f MB (max %.1f)", float64(t.rssStart)/1000, float64(t.rssEnd)/1000, float64(t.rssMax)/1000)
	})
	row("bytes per scrape (plain)", func(t *target) string {
		return fmt.Sprintf("%.1f kB (%d series, %d own) (×%.2f)", float64(t.bytes)/1000, t.series, t.seriesOwn, float64(t.bytes)/float64(ref.bytes))
	})
	row("CPU per scrape: sequential / 2 concurrent", func(t *target) string {
		return fmt.Sprintf("%s / %s", ms(t.concSeq), ms(t.concPar))
	})
	row("refused of concurrent scrapes", func(t *target) string { return fmt.Sprintf("%d of %d", t.refused, t.scrapes) })
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", d.Seconds()*1000) }

func durRange(ds []time.Duration) string {
	if len(ds) == 0 {
		return "-"
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return fmt.Sprintf("%.2f–%.2f ms", s[0].Seconds()*1000, s[len(s)-1].Seconds()*1000)
}

func median(ds []time.Duration) time.Duration { return quantile(ds, 0.5) }

func quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(int(q*float64(len(s))), len(s)-1)]
}

func (t *target) pid() int { return t.cmd.Process.Pid }

func (t *target) start(dir string, i int, stderr io.Writer) error {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	t.port = l.Addr().(*net.TCPAddr).Port
	l.Close()
	t.url = fmt.Sprintf("http://127.0.0.1:%d/metrics", t.port)
	args := append(slices.Clone(t.args), fmt.Sprintf("--web.listen-address=127.0.0.1:%d", t.port))
	t.cmd = exec.Command(args[0], args[1:]...)
	sub := filepath.Join(dir, fmt.Sprintf("%d-%s", i, strings.NewReplacer("@", "-", " ", "-", "(", "", ")", "").Replace(t.name)))
	for _, d := range []string{sub + "/state", sub + "/run"} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	t.cmd.Env = append(os.Environ(), "STATE_DIRECTORY="+sub+"/state", "RUNTIME_DIRECTORY="+sub+"/run")
	logf, err := os.Create(sub + ".log")
	if err != nil {
		return err
	}
	t.cmd.Stdout, t.cmd.Stderr = logf, logf
	if err := t.cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", t.name, err)
	}
	for deadline := time.Now().Add(20 * time.Second); ; {
		resp, err := http.Get(t.url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				fmt.Fprintf(stderr, "%s pid %d on %s\n", t.name, t.pid(), t.url)
				return nil
			}
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(sub + ".log")
			return fmt.Errorf("%s did not answer on %s: %v\n%s", t.name, t.url, err, b)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (t *target) stop() {
	if t.cmd != nil && t.cmd.Process != nil {
		t.cmd.Process.Kill()
		t.cmd.Wait()
	}
}

func (t *target) scrape(c *http.Client) ([]byte, int, error) {
	req, _ := http.NewRequest(http.MethodGet, t.url, nil)
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	resp, err := c.Do(req)
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return b, resp.StatusCode, err
}

// procCPU is the user + system CPU time of a process, all its threads
// (living and exited) included, in clock ticks from /proc/PID/stat, plus the
// finer-grained part from the living threads' schedstat when available.
func procCPU(pid int) time.Duration {
	var sum time.Duration
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	for _, f := range tasks {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		ns, _ := strconv.ParseInt(strings.Fields(string(b))[0], 10, 64)
		sum += time.Duration(ns)
	}
	if sum > 0 {
		return sum
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+2:]))
	u, _ := strconv.ParseInt(f[11], 10, 64)
	s, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(u+s) * 10 * time.Millisecond
}

// procRuns is how many times the process's living threads have been
// scheduled onto a CPU (schedstat's third field): its wake-ups, each of
// which costs the process more than the work it then does when it idles.
func procRuns(pid int) int64 {
	var sum int64
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	for _, f := range tasks {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		if fs := strings.Fields(string(b)); len(fs) == 3 {
			n, _ := strconv.ParseInt(fs[2], 10, 64)
			sum += n
		}
	}
	return sum
}

func rss(pid int) int64 {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "VmRSS:") {
			v, _ := strconv.ParseInt(strings.Fields(l)[1], 10, 64)
			return v
		}
	}
	return 0
}

func loadavg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// chronyd is the chronyd -x this run reads, and its NTP servers.
type chronyd struct {
	cmd                   *exec.Cmd
	socket, conf, pidFile string
	servers               []*ntptest.Server
}

func startChronyd(dir string, o options) (*chronyd, error) {
	bin, err := exec.LookPath("chronyd")
	if err != nil {
		return nil, errors.New("chronyd is not installed (scripts/test-deps.sh installs it)")
	}
	c := &chronyd{socket: filepath.Join(dir, "chronyd.sock"), conf: filepath.Join(dir, "chrony.conf"), pidFile: filepath.Join(dir, "chronyd.pid")}
	var conf strings.Builder
	for i := range o.sources {
		ip := fmt.Sprintf("127.0.0.%d", 11+i)
		s, err := ntptest.Start(net.JoinHostPort(ip, "0"))
		if err != nil {
			c.stop()
			return nil, err
		}
		c.servers = append(c.servers, s)
		fmt.Fprintf(&conf, "server %s port %d %s\n", ip, s.Addr().Port, o.ntpPoll)
	}
	fmt.Fprintf(&conf, "bindacqaddress 127.0.0.1\nport 0\ncmdport 0\nbindcmdaddress %s\npidfile %s\ndriftfile %s\n",
		c.socket, c.pidFile, filepath.Join(dir, "drift"))
	if err := os.WriteFile(c.conf, []byte(conf.String()), 0o600); err != nil {
		c.stop()
		return nil, err
	}
	// -x: never touch the clock. -n: foreground. -u root: no privilege drop.
	c.cmd = exec.Command(bin, "-n", "-x", "-u", "root", "-f", c.conf, "-L", "0", "-l", filepath.Join(dir, "chronyd.log"))
	if err := c.cmd.Start(); err != nil {
		c.stop()
		return nil, fmt.Errorf("starting chronyd: %w", err)
	}
	return c, nil
}

// waitSynced waits until chronyd is synchronised ('*') and n sources are
// selectable ('*', '+', or '-': good but left out of the combination), with
// chronyc.
func (c *chronyd) waitSynced(n int, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var last string
	for ctx.Err() == nil {
		out, err := exec.CommandContext(ctx, "chronyc", "-h", c.socket, "-c", "-n", "sources").Output()
		if err == nil {
			ok, synced := 0, false
			for _, l := range strings.Split(string(out), "\n") {
				f := strings.Split(l, ",")
				if len(f) > 1 && strings.Contains("*+-", f[1]) {
					ok++
					synced = synced || f[1] == "*"
				}
			}
			if synced && ok >= n {
				return nil
			}
			last = string(out)
		}
		time.Sleep(500 * time.Millisecond)
	}
	return fmt.Errorf("chronyd did not synchronise to %d sources within %s; last sources:\n%s", n, timeout, last)
}

func (c *chronyd) stop() {
	if c.cmd != nil && c.cmd.Process != nil {
		c.cmd.Process.Kill()
		c.cmd.Wait()
	}
	for _, s := range c.servers {
		s.Close()
	}
}
