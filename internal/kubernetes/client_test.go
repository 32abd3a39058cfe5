package kubernetes

import (
	"context"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// tlsAPIServer is an https API server on loopback; its client trusts it
// (the CA pinned as a kubeconfig pins it) and sends token.
func tlsAPIServer(t *testing.T, h http.HandlerFunc, token string) (*httptest.Server, *Client) {
	t.Helper()
	srv := httptest.NewTLSServer(h)
	t.Cleanup(srv.Close)
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	c, err := newClient(srv.URL, ca, nil, token, "", false)
	if err != nil {
		t.Fatal(err)
	}
	return srv, c
}

// TestHTTPClientNeverFollowsARedirect: a 301/302 turned the condition's
// PATCH into a GET that was counted a success, and a 307 from the CA-pinned
// https server to plain http on the same host sent the bearer token in
// clear (issue 32, item 4). Every redirect is an error naming its Location,
// and the other server hears nothing (the transport counts it as
// result="redirect": internal/transport/kubernetes
// TestHTTPClientRedirectCounted).
func TestHTTPClientNeverFollowsARedirect(t *testing.T) {
	t.Parallel()
	var plainHits atomic.Int32
	var leaked atomic.Value
	leaked.Store("")
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		plainHits.Add(1)
		leaked.Store(r.Header.Get("Authorization"))
	}))
	defer plain.Close()
	for _, code := range []int{http.StatusMovedPermanently, http.StatusFound, http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		t.Run(fmt.Sprint(code), func(t *testing.T) {
			location := plain.URL + "/api/v1/nodes/n/status"
			_, c := tlsAPIServer(t, func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, location, code)
			}, "s3cret")
			err := c.PatchNodeCondition(context.Background(), "n", Condition{Type: "ClockUntrusted", Status: "False"})
			var re *RedirectError
			if !errors.As(err, &re) || re.Code != code || !strings.Contains(err.Error(), location) || !strings.Contains(err.Error(), "not followed") {
				t.Errorf("PatchNodeCondition: %v, want a redirect error naming %s", err, location)
			}
		})
	}
	if n := plainHits.Load(); n != 0 {
		t.Errorf("the plain http server got %d requests (token %q), want none", n, leaked.Load())
	}
}

// TestHTTPClientPlainHTTPOnlyToLoopback: http:// was accepted to any host
// while the error for a bad scheme said "want an https:// URL" (issue 32,
// item 5). Plain http is for loopback only, and the errors say so.
func TestHTTPClientPlainHTTPOnlyToLoopback(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ server, want string }{
		{"http://127.0.0.1:6443", ""},
		{"http://[::1]:6443", ""},
		{"http://localhost:8080", ""},
		{"https://10.0.0.1:6443", ""},
		{"http://10.0.0.1:6443", "plain http:// is accepted only to a loopback address (127.0.0.1, ::1, localhost): the bearer token would cross the network in clear"},
		{"http://kubernetes.default.svc", "plain http:// is accepted only to a loopback address"},
		{"ftp://10.0.0.1", "want an https:// URL (or http:// to a loopback address: 127.0.0.1, ::1, localhost)"},
		{"10.0.0.1:6443", "want an https:// URL (or http:// to a loopback address"},
	} {
		_, err := newClient(tc.server, nil, nil, "t", "", false)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("newClient(%s): %v, want %q", tc.server, err, tc.want)
		}
	}
}

// TestHTTPClientBoundsTheErrorBody: an API server's 8 MiB error body was
// logged whole (12.6 MB of log in 12 s; issue 32, item 6). An error quotes
// at most MaxExcerpt bytes of it.
func TestHTTPClientBoundsTheErrorBody(t *testing.T) {
	t.Parallel()
	for name, body := range map[string]string{
		"text": strings.Repeat("x", 8<<20),
		"json": `{"kind":"Status","reason":"` + strings.Repeat("r", 8<<10) + `","message":"` + strings.Repeat("m", 8<<20) + `"}`,
	} {
		_, c := tlsAPIServer(t, func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = w.Write([]byte(body))
		}, "t")
		err := c.PatchNodeCondition(context.Background(), "n", Condition{Type: "ClockUntrusted"})
		var ae *APIError
		if !errors.As(err, &ae) || ae.Code != 500 {
			t.Fatalf("%s: %v, want an APIError 500", name, err)
		}
		if n := len(err.Error()); n > 3*MaxExcerpt {
			t.Errorf("%s: the error is %d bytes, want at most %d: %.200s…", name, n, 3*MaxExcerpt, err)
		}
		if !strings.Contains(err.Error(), "more bytes)") {
			t.Errorf("%s: the error does not say the body was cut: %.300s", name, err)
		}
	}
}

// kubeconfigWith writes a kubeconfig whose current context's user is user
// (YAML under "user:", or "" for a context naming a user the file lacks).
func kubeconfigWith(t *testing.T, dir, server, user string) string {
	t.Helper()
	users := ""
	if user != "" {
		users = "users:\n- name: u\n  user:\n" + user
	}
	p := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(p, []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
current-context: x
contexts:
- name: x
  context: {cluster: c, user: u}
clusters:
- name: c
  cluster: {server: %q}
%s`, server, users)), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestKubeconfigRefusesUnusableCredentials: an exec plugin, an auth
// provider or a context naming a missing user were ignored and the requests
// went out without credentials (issue 32, item 5).
func TestKubeconfigRefusesUnusableCredentials(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, user, want string }{
		{"exec plugin", "    exec: {apiVersion: client.authentication.k8s.io/v1, command: aws}\n", `user "u" authenticates with an exec plugin, which clockwatch does not run`},
		{"auth provider", "    auth-provider: {name: oidc}\n", `user "u" authenticates with an auth-provider`},
		{"basic auth", "    username: admin\n    password: x\n", `user "u" authenticates with a username and password`},
		{"no credentials", "    {}\n", `user "u" has no credentials clockwatch can use`},
		{"missing user", "", `context "x" names user "u", which is not among its users`},
		{"token", "    token: abc\n", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := KubeconfigClient(kubeconfigWith(t, t.TempDir(), "https://127.0.0.1:6443", tc.user))
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("KubeconfigClient: %v, want %q", err, tc.want)
			}
		})
	}
}

// TestOpenRefusesHostileTokenFiles: the token file was read with no size or
// type check, through links: a link to /dev/zero took RSS to 2.93 GB, a link
// to another file sent it as the bearer token, a FIFO hung the transport
// (and SIGTERM) for ever (issue 32, item 3). The kubeconfig likewise. Each
// is refused at once, naming the file; a projected token's links are
// followed.
func TestOpenRefusesHostileTokenFiles(t *testing.T) {
	t.Parallel()
	var got atomic.Value
	got.Store("")
	_, c := tlsAPIServer(t, func(w http.ResponseWriter, r *http.Request) {
		got.Store(r.Header.Get("Authorization"))
		_, _ = w.Write([]byte("{}"))
	}, "")
	dir := t.TempDir()
	unrelated := filepath.Join(t.TempDir(), "id_rsa")
	if err := os.WriteFile(unrelated, []byte("PRIVATE KEY"), 0o600); err != nil {
		t.Fatal(err)
	}
	mk := func(name string, fn func(p string) error) string {
		p := filepath.Join(dir, name)
		if err := fn(p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// The kubelet's projected volume: token -> ..data/token.
	if err := os.MkdirAll(filepath.Join(dir, "..2026_12_04"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "..2026_12_04", "token"), []byte("projected\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	mk("..data", func(p string) error { return os.Symlink("..2026_12_04", p) })
	projected := mk("token", func(p string) error { return os.Symlink("..data/token", p) })
	for _, tc := range []struct{ name, path, want string }{
		{"projected token", projected, ""},
		{"FIFO", mk("fifo", func(p string) error { return syscall.Mkfifo(p, 0o600) }), "is a FIFO, not a regular file"},
		{"link to /dev/zero", mk("zero", func(p string) error { return os.Symlink("/dev/zero", p) }), "is a symbolic link to /dev/zero, outside"},
		{"/dev/zero", "/dev/zero", "/dev/zero is a device, not a regular file"},
		{"link to an unrelated file", mk("other", func(p string) error { return os.Symlink(unrelated, p) }), "is a symbolic link to " + unrelated},
		{"huge", mk("huge", func(p string) error { return os.WriteFile(p, make([]byte, maxTokenBytes+1), 0o600) }), "is larger than 64 KiB"},
		{"empty", mk("empty", func(p string) error { return os.WriteFile(p, nil, 0o600) }), "is empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got.Store("")
			cc := *c
			cc.tokenFile = tc.path
			done := make(chan error, 1)
			go func() { _, err := cc.GetNode(context.Background(), "n"); done <- err }()
			var err error
			select {
			case err = <-done:
			case <-time.After(5 * time.Second):
				t.Fatal("the request blocked on the token file")
			}
			if tc.want == "" {
				if err != nil || got.Load() != "Bearer projected" {
					t.Errorf("GetNode: %v, Authorization %q; want the projected token", err, got.Load())
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "the bearer token file") {
				t.Errorf("GetNode: %v, want an error naming the token file with %q", err, tc.want)
			}
			if a := got.Load(); a != "" {
				t.Errorf("the server got Authorization %q", a)
			}
			// The kubeconfig and its tokenFile are refused the same way
			// at start.
			kc := kubeconfigWith(t, t.TempDir(), "https://127.0.0.1:6443", "    tokenFile: "+tc.path+"\n")
			if _, err := KubeconfigClient(kc); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("KubeconfigClient with this tokenFile: %v, want %q", err, tc.want)
			}
			if tc.path != projected {
				if _, err := KubeconfigClient(tc.path); err == nil || !strings.Contains(err.Error(), "the kubeconfig "+tc.path) && !strings.Contains(err.Error(), "--kubernetes.kubeconfig") {
					t.Errorf("KubeconfigClient(%s): %v, want it refused", tc.path, err)
				}
			}
		})
	}
}

// A kubeconfig that cannot be used says what is wrong and where.
func TestKubeconfigErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for name, tc := range map[string]struct{ file, want string }{
		"no context":      {"apiVersion: v1\nkind: Config\n", "no current-context"},
		"unknown context": {"current-context: x\ncontexts: []\n", `current-context "x" is not among its contexts`},
		"no server":       {"current-context: x\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\n", `no server for cluster "c"`},
		"bad CA": {"current-context: x\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\nclusters:\n- name: c\n  cluster: {server: 'https://127.0.0.1:1', certificate-authority-data: bm90IGEgY2VydA==}\nusers:\n- name: u\n  user: {token: t}\n",
			"the CA holds no PEM certificate"},
		"not yaml": {"{", "--kubernetes.kubeconfig"},
	} {
		p := dir + "/" + strings.ReplaceAll(name, " ", "-")
		if err := os.WriteFile(p, []byte(tc.file), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := KubeconfigClient(p)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", name, err, tc.want)
		}
	}
	if _, err := InClusterConfig(func(string) string { return "" }, dir); err == nil || !strings.Contains(err.Error(), "not in a pod") {
		t.Errorf("InClusterConfig outside a pod: %v", err)
	}
}
