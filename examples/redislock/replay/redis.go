package replay

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/clockwatch/clockwatch/examples/redislock/proxy"
)

// MasterName is the name the Sentinels monitor the master under.
const MasterName = "mymaster"

// Settings are the Redis and Sentinel settings of a run.
type Settings struct {
	// DownAfter is Sentinel's down-after-milliseconds (the article's 5000).
	DownAfter time.Duration
	// ParallelSyncs is Sentinel's parallel-syncs (the article's 1).
	ParallelSyncs int
	// FailoverTimeout is Sentinel's failover-timeout.
	FailoverTimeout time.Duration
	// MinReplicas sets min-replicas-to-write 1 and min-replicas-max-lag
	// MaxLag on the master and the replicas.
	MinReplicas bool
	MaxLag      int
	// NoSentinels starts the master and the replicas only.
	NoSentinels bool
}

// Server is one redis-server or Sentinel.
type Server struct {
	Name string
	Addr string
	Log  string
	proc *Proc
	cli  *redis.Client
}

// Client is a plain client to this server, for the experiment.
func (s *Server) Client() *redis.Client { return s.cli }

func (s *Server) stop() {
	s.cli.Close()
	s.proc.Kill()
}

// Topology is one master, two replicas and three Sentinels on loopback.
// The replicas replicate through ReplLink and the Sentinels watch the master
// through SentinelLink, so the experiment can stall either.
type Topology struct {
	Master       *Server
	Replicas     []*Server
	Sentinels    []*Server
	ReplLink     *proxy.Proxy
	SentinelLink *proxy.Proxy
	// Net is the workers' network: the master's announced address (the
	// Sentinel link's) leads straight to the master.
	Net *Net

	stopProxies context.CancelFunc
	proxiesDone sync.WaitGroup
}

// StartTopology starts the servers with their files in dir and waits until
// the replicas are in sync and every Sentinel knows both replicas and the
// two other Sentinels.
func StartTopology(ctx context.Context, tools Tools, dir string, s Settings) (_ *Topology, err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("topology directory: %w", err)
	}
	t := &Topology{Net: NewNet()}
	defer func() {
		if err != nil {
			t.Stop()
		}
	}()
	pctx, cancel := context.WithCancel(context.Background())
	t.stopProxies = cancel

	master, err := t.startRedis(ctx, tools, dir, "master", s, "")
	if err != nil {
		return nil, err
	}
	t.Master = master
	if t.ReplLink, err = t.startProxy(pctx, master.Addr); err != nil {
		return nil, err
	}
	if t.SentinelLink, err = t.startProxy(pctx, master.Addr); err != nil {
		return nil, err
	}
	t.Net.Alias(t.SentinelLink.Addr(), master.Addr)
	for i := 1; i <= 2; i++ {
		r, err := t.startRedis(ctx, tools, dir, fmt.Sprintf("replica%d", i), s, t.ReplLink.Addr())
		if err != nil {
			return nil, err
		}
		t.Replicas = append(t.Replicas, r)
	}
	if err := t.WaitInSync(ctx, 30*time.Second); err != nil {
		return nil, err
	}
	if s.NoSentinels {
		return t, nil
	}
	for i := 1; i <= 3; i++ {
		sn, err := t.startSentinel(ctx, tools, dir, fmt.Sprintf("sentinel%d", i), s)
		if err != nil {
			return nil, err
		}
		t.Sentinels = append(t.Sentinels, sn)
	}
	for _, sn := range t.Sentinels {
		err := poll(ctx, sn.proc, 30*time.Second, sn.Name+" to know 2 replicas and 2 other Sentinels", func(ctx context.Context) error {
			m, err := sn.cli.Do(ctx, "SENTINEL", "MASTER", MasterName).Result()
			if err != nil {
				return err
			}
			f := fields(m)
			if f["num-slaves"] != "2" || f["num-other-sentinels"] != "2" || f["flags"] != "master" {
				return fmt.Errorf("flags %s, replicas %s, other Sentinels %s", f["flags"], f["num-slaves"], f["num-other-sentinels"])
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("%w (log in %s)", err, sn.Log)
		}
	}
	return t, nil
}

// fields turns a RESP2 flat array or a RESP3 map into a map of strings.
func fields(v any) map[string]string {
	out := map[string]string{}
	switch m := v.(type) {
	case map[any]any:
		for k, v := range m {
			out[fmt.Sprint(k)] = fmt.Sprint(v)
		}
	case []any:
		for i := 0; i+1 < len(m); i += 2 {
			out[fmt.Sprint(m[i])] = fmt.Sprint(m[i+1])
		}
	}
	return out
}

func (t *Topology) startProxy(ctx context.Context, target string) (*proxy.Proxy, error) {
	p, err := proxy.Listen("127.0.0.1:0", target)
	if err != nil {
		return nil, err
	}
	t.proxiesDone.Add(1)
	go func() {
		defer t.proxiesDone.Done()
		_ = p.Run(ctx)
	}()
	return p, nil
}

func (t *Topology) startRedis(ctx context.Context, tools Tools, dir, name string, s Settings, replicaOf string) (*Server, error) {
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	sdir := filepath.Join(dir, name)
	if err := os.MkdirAll(sdir, 0o700); err != nil {
		return nil, fmt.Errorf("%s directory: %w", name, err)
	}
	conf := []string{
		"bind 127.0.0.1",
		"port " + strconv.Itoa(port),
		"daemonize no",
		"dir " + sdir,
		`save ""`,
		"appendonly no",
		// Full syncs start at once rather than after the default 5 s
		// (the replicas' first sync only; it does not change a failover).
		"repl-diskless-sync-delay 0",
	}
	if s.MinReplicas {
		conf = append(conf, "min-replicas-to-write 1", fmt.Sprintf("min-replicas-max-lag %d", s.MaxLag))
	}
	if replicaOf != "" {
		host, p, _ := net.SplitHostPort(replicaOf)
		conf = append(conf, "replicaof "+host+" "+p)
	}
	return t.startServer(ctx, name, sdir, tools.RedisServer, port, conf)
}

func (t *Topology) startSentinel(ctx context.Context, tools Tools, dir, name string, s Settings) (*Server, error) {
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	sdir := filepath.Join(dir, name)
	if err := os.MkdirAll(sdir, 0o700); err != nil {
		return nil, fmt.Errorf("%s directory: %w", name, err)
	}
	host, mport, _ := net.SplitHostPort(t.SentinelLink.Addr())
	conf := []string{
		"bind 127.0.0.1",
		"port " + strconv.Itoa(port),
		"daemonize no",
		"dir " + sdir,
		fmt.Sprintf("sentinel monitor %s %s %s 2", MasterName, host, mport),
		fmt.Sprintf("sentinel down-after-milliseconds %s %d", MasterName, s.DownAfter.Milliseconds()),
		fmt.Sprintf("sentinel parallel-syncs %s %d", MasterName, s.ParallelSyncs),
		fmt.Sprintf("sentinel failover-timeout %s %d", MasterName, s.FailoverTimeout.Milliseconds()),
	}
	return t.startServer(ctx, name, sdir, tools.RedisSentinel, port, conf)
}

func (t *Topology) startServer(ctx context.Context, name, sdir, bin string, port int, conf []string) (*Server, error) {
	confPath := filepath.Join(sdir, name+".conf")
	if err := os.WriteFile(confPath, []byte(strings.Join(conf, "\n")+"\n"), 0o600); err != nil {
		return nil, fmt.Errorf("%s config: %w", name, err)
	}
	logPath := filepath.Join(sdir, name+".log")
	p, err := start(exec.Command(bin, confPath), logPath)
	if err != nil {
		return nil, err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	s := &Server{Name: name, Addr: addr, Log: logPath, proc: p,
		cli: redis.NewClient(&redis.Options{Addr: addr, DialTimeout: time.Second, ReadTimeout: 2 * time.Second, MaxRetries: -1})}
	err = poll(ctx, p, 30*time.Second, name, func(ctx context.Context) error {
		return s.cli.Ping(ctx).Err()
	})
	if err != nil {
		s.stop()
		return nil, fmt.Errorf("%w (log in %s)", err, logPath)
	}
	return s, nil
}

// WaitInSync waits until both replicas are connected and have the master's
// replication offset.
func (t *Topology) WaitInSync(ctx context.Context, timeout time.Duration) error {
	return poll(ctx, t.Master.proc, timeout, "the replicas to be in sync", func(ctx context.Context) error {
		info, err := t.Master.cli.Info(ctx, "replication").Result()
		if err != nil {
			return err
		}
		f := infoFields(info)
		if f["connected_slaves"] != "2" {
			return fmt.Errorf("%s replicas connected", f["connected_slaves"])
		}
		for i := range 2 {
			s := f[fmt.Sprintf("slave%d", i)]
			if !strings.Contains(s, "state=online") || !strings.Contains(s, "offset="+f["master_repl_offset"]+",") {
				return fmt.Errorf("replica %s behind master offset %s", s, f["master_repl_offset"])
			}
		}
		return nil
	})
}

func infoFields(info string) map[string]string {
	out := map[string]string{}
	for _, l := range strings.Split(info, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(l), ":")
		if ok {
			out[k] = v
		}
	}
	return out
}

// SentinelAddrs are the Sentinels' addresses.
func (t *Topology) SentinelAddrs() []string {
	var out []string
	for _, s := range t.Sentinels {
		out = append(out, s.Addr)
	}
	return out
}

// ReplicaAddrs are the replicas' addresses.
func (t *Topology) ReplicaAddrs() []string {
	var out []string
	for _, s := range t.Replicas {
		out = append(out, s.Addr)
	}
	return out
}

// KillMaster runs SHUTDOWN NOSAVE NOW on the master and returns when its
// process has exited. NOW matters on Redis 7: without it SHUTDOWN waits up
// to shutdown-timeout (10 s) for lagging replicas to catch up.
func (t *Topology) KillMaster(ctx context.Context) (time.Time, error) {
	err := t.Master.cli.Do(ctx, "SHUTDOWN", "NOSAVE", "NOW").Err()
	if err == nil {
		return time.Time{}, errors.New("SHUTDOWN NOSAVE NOW answered OK: the master did not exit")
	}
	select {
	case <-t.Master.proc.done:
		return time.Now(), nil
	case <-time.After(5 * time.Second):
		return time.Time{}, fmt.Errorf("the master still runs 5 s after SHUTDOWN NOSAVE NOW (%v)", err)
	case <-ctx.Done():
		return time.Time{}, ctx.Err()
	}
}

// Stop stops every server and proxy.
func (t *Topology) Stop() {
	for _, s := range t.Sentinels {
		s.stop()
	}
	for _, s := range t.Replicas {
		s.stop()
	}
	if t.Master != nil {
		t.Master.stop()
	}
	if t.stopProxies != nil {
		t.stopProxies()
		t.proxiesDone.Wait()
	}
}

// SentinelEvents records when each Sentinel event about the master was
// first published by any Sentinel.
type SentinelEvents struct {
	mu    sync.Mutex
	first map[string]time.Time
	lines []string
	subs  []*redis.PubSub
}

// WatchSentinels subscribes to every event of every Sentinel.
func (t *Topology) WatchSentinels(ctx context.Context) (*SentinelEvents, error) {
	ev := &SentinelEvents{first: map[string]time.Time{}}
	for _, s := range t.Sentinels {
		ps := s.cli.PSubscribe(ctx, "*")
		if _, err := ps.Receive(ctx); err != nil {
			ev.Close()
			return nil, fmt.Errorf("subscribing to %s's events: %w", s.Name, err)
		}
		ev.subs = append(ev.subs, ps)
		go func(name string, ch <-chan *redis.Message) {
			for m := range ch {
				ev.add(name, m.Channel, m.Payload)
			}
		}(s.Name, ps.Channel())
	}
	return ev, nil
}

func (ev *SentinelEvents) add(sentinel, event, payload string) {
	now := time.Now()
	ev.mu.Lock()
	defer ev.mu.Unlock()
	ev.lines = append(ev.lines, fmt.Sprintf("%s %s %s %s", now.Format("15:04:05.000"), sentinel, event, payload))
	// Events about the master: "master mymaster ..." or, for
	// +switch-master, "mymaster old new".
	if !strings.HasPrefix(payload, "master "+MasterName) && !strings.HasPrefix(payload, MasterName+" ") {
		return
	}
	if _, ok := ev.first[event]; !ok {
		ev.first[event] = now
	}
}

// First is when event was first published, zero if it was not.
func (ev *SentinelEvents) First(event string) time.Time {
	ev.mu.Lock()
	defer ev.mu.Unlock()
	return ev.first[event]
}

// Lines are every event received, in order.
func (ev *SentinelEvents) Lines() []string {
	ev.mu.Lock()
	defer ev.mu.Unlock()
	return append([]string(nil), ev.lines...)
}

// Close ends the subscriptions.
func (ev *SentinelEvents) Close() {
	for _, ps := range ev.subs {
		ps.Close()
	}
}

// QuietRedisClient silences go-redis's own log (a line for every Sentinel
// it cannot reach while the master is down). It sets go-redis's package
// logger: call it from main or a test, not from a library.
func QuietRedisClient() { redis.SetLogger(quietLogger{}) }

type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}
