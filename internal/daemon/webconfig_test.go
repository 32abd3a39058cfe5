package daemon

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestOpenRefusesWebConfigFIFO: exporter-toolkit reads --web.config.file and
// the certificates it names with os.ReadFile: a FIFO hung the HTTP server's
// start for ever, a link to /dev/zero read until memory ran out (issue 32,
// item 3). serveHTTP refuses them at once, naming the file.
func TestOpenRefusesWebConfigFIFO(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fifo := filepath.Join(dir, "web.yml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	certDir := t.TempDir()
	zeroCert := filepath.Join(certDir, "tls.crt")
	if err := os.Symlink("/dev/zero", zeroCert); err != nil {
		t.Fatal(err)
	}
	withCert := filepath.Join(certDir, "web.yml")
	if err := os.WriteFile(withCert, []byte("tls_server_config:\n  cert_file: tls.crt\n  key_file: tls.key\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ file, want string }{
		{fifo, "--web.config.file " + fifo + " is a FIFO, not a regular file"},
		{withCert, "the web config's cert_file " + zeroCert + " is a symbolic link to /dev/zero, outside"},
		{"/dev/zero", "--web.config.file /dev/zero is a device"},
	} {
		wc := webConfig("127.0.0.1:0")
		wc.WebConfigFile = &tc.file
		d := New(nil, Options{Web: wc}, slog.New(slog.DiscardHandler))
		done := make(chan error, 1)
		ctx, cancel := context.WithCancel(t.Context())
		go func() { done <- d.serveHTTP(ctx, nil, nil) }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("serveHTTP with %s: %v, want %q", tc.file, err, tc.want)
			}
		case <-time.After(5 * time.Second):
			t.Errorf("serveHTTP with %s blocked", tc.file)
		}
		cancel()
	}
}
