package apiserver

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// AdminToken is the static token of the harness's cluster admin
// (system:masters).
const AdminToken = "clockwatch-test-admin"

// NodeToken is the static token of the kubelet on NodeName (system:nodes,
// authorized by the Node authorizer), for the kubelet test.
const (
	NodeToken = "clockwatch-test-node"
	NodeName  = "clockwatch-vm"
)

// syncBuffer collects a child's output while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// proc is a child process the test started, stopped by PID at the end.
type proc struct {
	cmd  *exec.Cmd
	out  *syncBuffer
	done chan struct{}
}

func start(t *testing.T, name string, args []string, env ...string) *proc {
	t.Helper()
	p := &proc{cmd: exec.Command(name, args...), out: &syncBuffer{}, done: make(chan struct{})}
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	p.cmd.Env = append(os.Environ(), env...)
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", name, err)
	}
	go func() { p.cmd.Wait(); close(p.done) }()
	t.Cleanup(p.stop)
	return p
}

func (p *proc) stop() {
	select {
	case <-p.done:
		return
	default:
	}
	p.cmd.Process.Signal(os.Interrupt)
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
		p.cmd.Process.Kill()
		<-p.done
	}
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func require(t *testing.T, name string) string {
	t.Helper()
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	for _, d := range []string{"/usr/sbin", "/sbin", "/usr/bin"} {
		if _, err := os.Stat(filepath.Join(d, name)); err == nil {
			return filepath.Join(d, name)
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("CI=true and a test prerequisite is missing: %s (run scripts/test-deps.sh)", name)
	}
	t.Skipf("%s not found; run scripts/test-deps.sh", name)
	return ""
}

// goBuild builds a package into dir, timing it; env adds to the
// environment.
func goBuild(t *testing.T, dir, out, pkg string, env ...string) time.Duration {
	t.Helper()
	began := time.Now()
	cmd := exec.Command("go", "build", "-trimpath", "-o", out, pkg)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, b)
	}
	return time.Since(began)
}

// Cluster is etcd and a kube-apiserver on loopback.
type Cluster struct {
	URL     string
	CAFile  string
	dir     string
	bin     string
	args    []string
	etcd    *proc
	api     *proc
	t       *testing.T
	Started time.Duration // from the API server's exec to /readyz
}

// StartCluster starts etcd and the API server built at bin.
func StartCluster(t *testing.T, bin string) *Cluster {
	t.Helper()
	etcdBin := require(t, "etcd")
	dir := t.TempDir()
	c := &Cluster{dir: dir, bin: bin, t: t}
	cport, pport := freePort(t), freePort(t)
	client := "http://127.0.0.1:" + strconv.Itoa(cport)
	peer := "http://127.0.0.1:" + strconv.Itoa(pport)
	c.etcd = start(t, etcdBin, []string{"--name", "clockwatch-test", "--data-dir", filepath.Join(dir, "etcd"),
		"--listen-client-urls", client, "--advertise-client-urls", client,
		"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer, "--initial-cluster", "clockwatch-test=" + peer,
		"--log-level", "warn"})

	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	keyFile := write("sa.key", pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}))
	pubFile := write("sa.pub", pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}))
	tokens := write("tokens.csv", []byte(AdminToken+",admin,admin-uid,system:masters\n"+
		NodeToken+",system:node:"+NodeName+",node-uid,system:nodes\n"))
	port := freePort(t)
	certDir := filepath.Join(dir, "certs")
	c.URL = "https://127.0.0.1:" + strconv.Itoa(port)
	c.CAFile = filepath.Join(certDir, "apiserver.crt")
	c.args = []string{"--etcd-servers=" + client, "--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port), "--cert-dir=" + certDir,
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local", "--service-account-key-file=" + pubFile,
		"--service-account-signing-key-file=" + keyFile, "--token-auth-file=" + tokens,
		"--authorization-mode=Node,RBAC", "--service-cluster-ip-range=10.96.0.0/24", "--v=0"}
	c.Start()
	return c
}

// Start starts (or restarts) the API server and waits for /readyz.
func (c *Cluster) Start() {
	t := c.t
	t.Helper()
	began := time.Now()
	c.api = start(t, c.bin, c.args)
	hc := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	deadline := time.Now().Add(90 * time.Second)
	for {
		req, _ := http.NewRequest(http.MethodGet, c.URL+"/readyz", nil)
		req.Header.Set("Authorization", "Bearer "+AdminToken)
		resp, err := hc.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				c.Started = time.Since(began)
				return
			}
		}
		if c.api.exited() || time.Now().After(deadline) {
			t.Fatalf("kube-apiserver not ready (exited %v): %v\n%s\netcd:\n%s", c.api.exited(), err, tail(c.api.out.String()), tail(c.etcd.out.String()))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Stop stops the API server (etcd keeps the cluster's state).
func (c *Cluster) Stop() { c.api.stop() }

func tail(s string) string {
	if len(s) > 4000 {
		return "..." + s[len(s)-4000:]
	}
	return s
}

// Chronyd is a chronyd -x on loopback synchronised to another chronyd -x
// (the NTP server, serving this machine's time with `local`), with an offset
// correction of its server line: chronyd then believes the clock is that far
// off, and with -x cannot correct it.
type Chronyd struct {
	Dir, Socket string
	server      *proc
	client      *proc
	bin         string
	ntpPort     int
	t           *testing.T
}

// StartChronyd starts the pair with the given offset (seconds).
func StartChronyd(t *testing.T, offset float64) *Chronyd {
	t.Helper()
	bin := require(t, "chronyd")
	dir, err := os.MkdirTemp("", "cw-k8s-chrony-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	c := &Chronyd{Dir: dir, Socket: filepath.Join(dir, "chronyd.sock"), bin: bin, ntpPort: freeUDPPort(t), t: t}
	srv := filepath.Join(dir, "server")
	if err := os.Mkdir(srv, 0o700); err != nil {
		t.Fatal(err)
	}
	conf := fmt.Sprintf("port %d\nbindaddress 127.0.0.1\nallow 127.0.0.1\nlocal stratum 1\ncmdport 0\nbindcmdaddress %s\npidfile %s\ndriftfile %s\n",
		c.ntpPort, filepath.Join(srv, "chronyd.sock"), filepath.Join(srv, "chronyd.pid"), filepath.Join(srv, "drift"))
	c.server = c.run(srv, conf, filepath.Join(srv, "chronyd.sock"))
	c.Restart(offset)
	return c
}

// Restart restarts the client chronyd with another offset.
func (c *Chronyd) Restart(offset float64) {
	c.t.Helper()
	if c.client != nil {
		c.client.stop()
		os.Remove(c.Socket)
	}
	conf := fmt.Sprintf("server 127.0.0.1 port %d iburst minpoll -4 maxpoll -4 offset %g\nbindacqaddress 127.0.0.1\nport 0\ncmdport 0\nbindcmdaddress %s\npidfile %s\ndriftfile %s\n",
		c.ntpPort, offset, c.Socket, filepath.Join(c.Dir, "chronyd.pid"), filepath.Join(c.Dir, "drift"))
	c.client = c.run(c.Dir, conf, c.Socket)
}

func (c *Chronyd) run(dir, conf, socket string) *proc {
	c.t.Helper()
	path := filepath.Join(dir, "chrony.conf")
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		c.t.Fatal(err)
	}
	// -x: never touch the clock; -n: foreground; -u root: no privilege
	// drop (the directories are root's).
	p := start(c.t, c.bin, []string{"-n", "-x", "-u", "root", "-f", path, "-L", "0", "-l", filepath.Join(dir, "chronyd.log")})
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Stat(socket); err == nil {
			return p
		}
		if p.exited() || time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(dir, "chronyd.log"))
			c.t.Fatalf("chronyd did not start: %s\n%s", p.out.String(), log)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func freeUDPPort(t *testing.T) int {
	t.Helper()
	c, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).Port
}

// waitFor polls f until it returns nil or d passes; it returns the last
// error.
func waitFor(ctx context.Context, d time.Duration, f func() error) error {
	deadline := time.Now().Add(d)
	for {
		err := f()
		if err == nil || time.Now().After(deadline) || ctx.Err() != nil {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func schemaGK(group, kind string) schema.GroupKind { return schema.GroupKind{Group: group, Kind: kind} }
