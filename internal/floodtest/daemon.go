package floodtest

import (
	"bytes"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// daemon is a clockwatch started for the floods: its stepdown socket is
// open to every local user (mode 0666, in a directory anyone may enter),
// and its HTTP port speaks TLS with an RSA-2048 key (the most expensive
// handshake of the usual keys).
type daemon struct {
	dir    string
	socket string
	addr   string
	cmd    *exec.Cmd
	done   chan struct{}

	mu  sync.Mutex
	log bytes.Buffer
}

// daemonConfig has no time source, and the triggers that a host without a
// time daemon would hold in stepdown are off: the state is ok and drills
// are allowed.
const daemonConfig = `chrony:
  enabled: false
ntpd:
  enabled: false
ptp:
  enabled: false
timesyncd:
  mode: "off"
stepdown:
  mode: "0666"
  triggers:
    error_bound: {enabled: false}
    unsynchronized: {enabled: false}
`

// startDaemon runs bin in dir (which anyone may enter), with
// --runtime.gomaxprocs when gomaxprocs > 0.
func startDaemon(bin, dir string, gomaxprocs int) (*daemon, error) {
	d := &daemon{dir: dir, done: make(chan struct{})}
	run := filepath.Join(dir, "run")
	state := filepath.Join(dir, "state")
	if err := os.Mkdir(run, 0o755); err != nil {
		return nil, err
	}
	if err := os.Mkdir(state, 0o700); err != nil {
		return nil, err
	}
	if err := writeCert(dir); err != nil {
		return nil, fmt.Errorf("making a TLS certificate: %w", err)
	}
	web := filepath.Join(dir, "web.yml")
	if err := os.WriteFile(web, []byte("tls_server_config:\n  cert_file: "+filepath.Join(dir, "cert.pem")+"\n  key_file: "+filepath.Join(dir, "key.pem")+"\n"), 0o600); err != nil {
		return nil, err
	}
	conf := filepath.Join(dir, "clockwatch.yml")
	if err := os.WriteFile(conf, []byte(daemonConfig), 0o600); err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	d.addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	d.socket = filepath.Join(run, "stepdown.sock")
	args := []string{"--config.file=" + conf, "--web.listen-address=" + d.addr, "--web.config.file=" + web, "--log.level=warn"}
	if gomaxprocs > 0 {
		args = append(args, "--runtime.gomaxprocs="+strconv.Itoa(gomaxprocs))
	}
	d.cmd = exec.Command(bin, args...)
	d.cmd.Env = append(os.Environ(), "STATE_DIRECTORY="+state, "RUNTIME_DIRECTORY="+run)
	d.cmd.Stderr = &lockedWriter{mu: &d.mu, w: &d.log}
	d.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := d.cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", bin, err)
	}
	go func() { d.cmd.Wait(); close(d.done) }()
	return d, nil
}

// stop ends the daemon by its PID: SIGTERM, then SIGKILL after 10 s.
func (d *daemon) stop() error {
	select {
	case <-d.done:
		return fmt.Errorf("clockwatch had exited (%v); log:\n%s", d.cmd.ProcessState, d.logText())
	default:
	}
	d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.done:
		return nil
	case <-time.After(10 * time.Second):
		d.cmd.Process.Kill()
		<-d.done
		return errors.New("clockwatch did not stop within 10 s of SIGTERM; killed")
	}
}

func (d *daemon) logText() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.log.String()
}

// lockedWriter keeps at most the first 1 MiB of a process's output.
type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.w.Len() < 1<<20 {
		l.w.Write(p)
	}
	return len(p), nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// writeCert writes a self-signed RSA-2048 certificate for 127.0.0.1 to
// dir/cert.pem and its key to dir/key.pem.
func writeCert(dir string) error {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "clockwatch floodtest"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return err
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "cert.pem"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "key.pem"), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}), 0o600)
}

// copyExecutable copies this process's executable into dir, where another
// uid may run it (a test binary's own directory is private to root).
func copyExecutable(dir string) (string, error) {
	self, err := os.Executable()
	if err != nil {
		return "", err
	}
	src, err := os.Open(self)
	if err != nil {
		return "", err
	}
	defer src.Close()
	dst := filepath.Join(dir, "flood")
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o755)
	if err != nil {
		return "", err
	}
	if _, err := io.Copy(out, src); err != nil {
		out.Close()
		return "", err
	}
	return dst, out.Close()
}
