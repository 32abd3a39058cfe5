package container

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"

	"github.com/clockwatch/clockwatch/internal/chronydtest"
	"github.com/clockwatch/clockwatch/internal/ociimage"
	"github.com/clockwatch/clockwatch/internal/testtool"
	"github.com/clockwatch/clockwatch/stepdown"
)

// podman runs podman with this machine's quirks (docs/kubernetes.md,
// FIELD-NOTES): runc (Debian's crun 1.8 refuses the hybrid cgroups),
// cgroupfs (no systemd as PID 1), and storage of the test's own.
type podman struct {
	t    *testing.T
	bin  string
	root string
}

func (p *podman) args(args ...string) []string {
	return append([]string{"--root", filepath.Join(p.root, "storage"), "--runroot", filepath.Join(p.root, "run"),
		"--storage-driver", "vfs", "--runtime", "runc", "--cgroup-manager", "cgroupfs", "--events-backend", "none",
		"--tmpdir", filepath.Join(p.root, "tmp")}, args...)
}

func (p *podman) cmd(ctx context.Context, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, p.bin, p.args(args...)...)
}

func (p *podman) run(args ...string) string {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := p.cmd(ctx, args...).CombinedOutput()
	if err != nil {
		p.t.Fatalf("podman %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// The security context of deploy/kubernetes' DaemonSet, as podman flags:
// runAsUser/runAsGroup, readOnlyRootFilesystem, capabilities drop ALL,
// allowPrivilegeEscalation false, seccompProfile RuntimeDefault (podman's
// default profile), hostNetwork, and the rlimits this sandbox allows.
var securityContext = []string{
	"--user", fmt.Sprintf("%d:%d", ociimage.UID, ociimage.GID),
	"--read-only", "--read-only-tmpfs=false",
	"--cap-drop", "all",
	"--security-opt", "no-new-privileges",
	"--network", "host",
	"--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024",
}

// newPodman returns podman with storage in a directory of the test's own.
func newPodman(t *testing.T) *podman {
	t.Helper()
	testtool.Short(t)
	// Not t.TempDir: podman's helpers (conmon, the exit files) may still
	// write under the root for a moment after rm returns, and TempDir's
	// single RemoveAll then fails the test ("directory not empty", seen at
	// load 17). The cleanup below retries.
	root, err := os.MkdirTemp("", "clockwatch-podman-")
	if err != nil {
		t.Fatal(err)
	}
	p := &podman{t: t, bin: testtool.Require(t, "podman"), root: root}
	testtool.Require(t, "runc")
	for _, d := range []string{"storage", "run", "tmp"} {
		if err := os.MkdirAll(filepath.Join(p.root, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		// Containers first (they hold mounts of the storage), then storage.
		exec.Command(p.bin, p.args("rm", "--force", "--all", "--time", "0")...).Run()
		var err error
		for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(200 * time.Millisecond) {
			if err = os.RemoveAll(root); err == nil || time.Now().After(deadline) {
				break
			}
		}
		if err != nil {
			t.Errorf("removing podman's root %s: %v", root, err)
		}
	})
	return p
}

// buildBinary builds this tree's static binary into dir.
func buildBinary(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "clockwatch")
	build := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w -X github.com/prometheus/common/version.Version=0.0.0-test", "-o", bin, "../../cmd/clockwatch")
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

func TestImageUnderPodman(t *testing.T) {
	p := newPodman(t)
	// The image, as make image builds it (internal/ociimage), from a
	// static binary of this tree.
	work := t.TempDir()
	bin := buildBinary(t, work)
	b, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	created := time.Unix(1764633600, 0)
	img, err := ociimage.Build(ociimage.Options{Binary: b, Arch: "amd64", Version: "0.0.0-test", Revision: "test",
		Created: created, Name: "clockwatch:test"})
	if err != nil {
		t.Fatal(err)
	}
	archive := filepath.Join(work, "clockwatch-image-amd64.tar")
	f, err := os.Create(archive)
	if err != nil {
		t.Fatal(err)
	}
	if err := img.WriteArchive(f, created); err != nil {
		t.Fatal(err)
	}
	f.Close()
	p.run("load", "-i", archive)
	const ref = "localhost/clockwatch:test"
	// podman keeps the manifest's digest and the labels.
	var inspected []struct {
		Digest string
		Config struct {
			User   string
			Labels map[string]string
		}
	}
	if err := json.Unmarshal([]byte(p.run("image", "inspect", ref)), &inspected); err != nil || len(inspected) != 1 {
		t.Fatalf("podman image inspect: %v %v", err, inspected)
	}
	if got := inspected[0].Digest; got != img.Digest {
		t.Errorf("podman's digest %s, the archive's %s", got, img.Digest)
	}
	if got, want := inspected[0].Config.User, fmt.Sprintf("%d:%d", ociimage.UID, ociimage.GID); got != want {
		t.Errorf("image user %q, want %q", got, want)
	}
	if got := inspected[0].Config.Labels["org.opencontainers.image.version"]; got != "0.0.0-test" {
		t.Errorf("label org.opencontainers.image.version = %q", got)
	}

	// A real chronyd -x on the host whose socket the image's user may use
	// through chronyd's group (gid 0 for a chronyd run as root; _chrony's
	// on a Debian node, the chart's chrony.gid).
	chronyd := chronydtest.Start(t, chronydtest.Options{GroupAccess: true})

	// The node's host paths: /run/clockwatch (the socket, the segment, the
	// reply socket chronyd answers to) and /var/lib/clockwatch (the epoch),
	// both the daemon's user's. The reply socket is bound where chronyd,
	// in the host's mount namespace, finds it at the same path: the run
	// directory is mounted at its own path too, as the DaemonSet's
	// /run/clockwatch host path is.
	runDir := filepath.Join(work, "run")
	stateDir := filepath.Join(work, "state")
	for _, d := range []string{runDir, stateDir} {
		if err := os.Mkdir(d, 0o750); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(d, ociimage.UID, ociimage.GID); err != nil {
			t.Fatal(err)
		}
	}
	// The socket group's members (the application) must reach the socket
	// through the directory.
	if err := os.Chmod(runDir, 0o750); err != nil {
		t.Fatal(err)
	}
	port := freePort(t)
	conf := filepath.Join(work, "clockwatch.yml")
	writeFile(t, conf, fmt.Sprintf(`chrony:
  address: %s
  reply_socket_dir: %s
  conf_path: ""
stepdown:
  socket: /run/clockwatch/stepdown.sock
  mode: "0660"
  # chronyd -x never disciplines this host's kernel clock, which then stays
  # unsynchronised with a saturated maximum error: judge chronyd alone.
  triggers:
    error_bound:
      enabled: false
    unsynchronized:
      enabled: false
journal:
  dir: /var/lib/clockwatch
`, chronyd.Socket, runDir))

	daemon := "clockwatch-daemon"
	// The DaemonSet adds SYS_NICE to the daemon's container alone (the
	// application's pod below has none).
	p.run(append(append([]string{"run", "--detach", "--name", daemon, "--group-add", "0", "--cap-add", "sys_nice"}, securityContext...),
		"-v", chronyd.Dir+":"+chronyd.Dir,
		"-v", runDir+":/run/clockwatch",
		"-v", runDir+":"+runDir,
		"-v", stateDir+":/var/lib/clockwatch",
		"-v", conf+":/etc/clockwatch/clockwatch.yml:ro",
		ref, "--web.listen-address=127.0.0.1:"+strconv.Itoa(port))...)
	t.Cleanup(func() {
		if t.Failed() {
			out, _ := p.cmd(context.Background(), "logs", daemon).CombinedOutput()
			t.Logf("clockwatch's log:\n%s", out)
		}
	})

	// /metrics: chronyd read from inside the container.
	base := "http://127.0.0.1:" + strconv.Itoa(port)
	waitFor(t, 30*time.Second, "clockwatch_chrony_up 1 and /readyz", func() (bool, string) {
		m := get(base + "/metrics")
		r := get(base + "/readyz")
		return strings.Contains(m, "\nclockwatch_chrony_up 1\n") && r == "ok\n", r
	})
	if h := get(base + "/healthz"); h != "ok\n" {
		t.Errorf("/healthz = %q", h)
	}
	checkNice(t, p, daemon)
	// clockwatch status, in the container, as kubectl exec would run it.
	// Its exit code is the health (2: critical, as this host's kernel clock
	// is undisciplined); what matters is that it read the daemon's view.
	out, _ := p.cmd(context.Background(), "exec", daemon, "/clockwatch", "status").CombinedOutput()
	status := string(out)
	if !strings.Contains(status, "chronyd        : reference 127.0.0.11") {
		t.Errorf("clockwatch status does not report chrony:\n%s", status)
	}
	t.Logf("clockwatch status in the container:\n%s", status)

	// The application: another uid, in the socket's group, the host path
	// mounted read-only, as examples/kubernetes' pod.
	watch := &testtool.SyncBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	app := p.cmd(ctx, append(append([]string{"run", "--rm", "--name", "clockwatch-app", "--user", "1000:1000",
		"--group-add", strconv.Itoa(ociimage.GID)}, securityContext[2:]...),
		"-v", runDir+":/run/clockwatch:ro", ref, "watch", "--json", "--socket", "/run/clockwatch/stepdown.sock")...)
	app.Stdout, app.Stderr = watch, watch
	if err := app.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		p.cmd(context.Background(), "stop", "--time", "1", "clockwatch-app").Run()
		app.Wait()
	}()
	waitFor(t, 30*time.Second, "the application's hello", func() (bool, string) {
		return strings.Contains(watch.String(), `"type":"hello"`), watch.String()
	})

	// A drill, asked for in the daemon's container (its own user may).
	p.run("exec", daemon, "/clockwatch", "drill", "--socket", "/run/clockwatch/stepdown.sock", "--hold", "1s")
	waitFor(t, 30*time.Second, "the drill's stepdown and resume in the application", func() (bool, string) {
		msgs := messages(watch.String())
		var down, up bool
		for _, m := range msgs {
			down = down || m.Type == stepdown.TypeStepdown && m.Drill
			up = up || down && m.Type == stepdown.TypeResume && m.Drill
		}
		return down && up, watch.String()
	})
	t.Logf("the application received:\n%s", watch.String())
}

// The Containerfile for users' pipelines builds offline with podman from a
// context holding the binary, and gives the image make image gives: the same
// user, passwd and group, entrypoint and labels.
func TestContainerfile(t *testing.T) {
	p := newPodman(t)
	ctxDir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(ctxDir, "dist/linux-amd64"), 0o755); err != nil {
		t.Fatal(err)
	}
	bin := buildBinary(t, filepath.Join(ctxDir, "dist/linux-amd64"))
	// setcap cap_sys_nice=p, as the Containerfile asks: the DaemonSet's
	// SYS_NICE reaches the non-root daemon through it.
	if err := unix.Setxattr(bin, "security.capability", []byte(ociimage.SysNiceCap), 0); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(ctxDir, "packaging/image"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"Containerfile", "packaging/image/passwd", "packaging/image/group"} {
		b, err := os.ReadFile(filepath.Join("../..", f))
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(ctxDir, f), string(b))
	}
	// The files the Containerfile copies are the ones make image writes.
	for _, f := range ociimage.Layer(ociimage.Options{}) {
		if f.Path != "etc/passwd" && f.Path != "etc/group" {
			continue
		}
		b, err := os.ReadFile(filepath.Join("../../packaging/image", filepath.Base(f.Path)))
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(string(f.Data), string(b)); diff != "" {
			t.Errorf("packaging/image/%s differs from internal/ociimage's /%s (-image +Containerfile):\n%s", filepath.Base(f.Path), f.Path, diff)
		}
	}
	p.run("build", "--network", "none", "--platform", "linux/amd64", "--build-arg", "TARGETARCH=amd64",
		"--build-arg", "VERSION=0.0.0-test", "-f", filepath.Join(ctxDir, "Containerfile"), "-t", "clockwatch:containerfile", ctxDir)
	var inspected []struct {
		Config struct {
			User       string
			Entrypoint []string
			Labels     map[string]string
		}
	}
	if err := json.Unmarshal([]byte(p.run("image", "inspect", "localhost/clockwatch:containerfile")), &inspected); err != nil || len(inspected) != 1 {
		t.Fatalf("podman image inspect: %v %v", err, inspected)
	}
	want := ociimage.Labels(ociimage.Options{Version: "0.0.0-test", Revision: "unknown", Source: "https://github.com/clockwatch/clockwatch"})
	delete(want, "org.opencontainers.image.created") // the build's time: a Containerfile build is not reproducible
	got := inspected[0].Config.Labels
	for k := range got {
		if _, ok := want[k]; !ok {
			delete(got, k) // buildah's own (io.buildah.version)
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the Containerfile's labels (-make image +Containerfile):\n%s", diff)
	}
	if u := inspected[0].Config.User; u != fmt.Sprintf("%d:%d", ociimage.UID, ociimage.GID) {
		t.Errorf("user %q", u)
	}
	if diff := cmp.Diff([]string{"/clockwatch"}, inspected[0].Config.Entrypoint); diff != "" {
		t.Errorf("entrypoint (-want +got):\n%s", diff)
	}
	// COPY kept the file capability.
	root := strings.TrimSpace(p.run("image", "mount", "localhost/clockwatch:containerfile"))
	caps := make([]byte, 64)
	n, err := unix.Getxattr(filepath.Join(root, "clockwatch"), "security.capability", caps)
	p.run("image", "unmount", "localhost/clockwatch:containerfile")
	if err != nil || string(caps[:n]) != ociimage.SysNiceCap {
		t.Errorf("/clockwatch's security.capability in the Containerfile's image: %x, %v; want %x (cap_sys_nice=p)", caps[:max(n, 0)], err, ociimage.SysNiceCap)
	}
	out := p.run(append(append([]string{"run", "--rm"}, securityContext...), "localhost/clockwatch:containerfile", "--version")...)
	if !strings.Contains(out, "clockwatch, version 0.0.0-test") {
		t.Errorf("clockwatch --version in the Containerfile's image: %s", out)
	}
}

// messages parses the JSON lines `clockwatch watch --json` prints.
func messages(out string) []stepdown.Message {
	var ms []stepdown.Message
	for _, l := range strings.Split(out, "\n") {
		var m stepdown.Message
		if i := strings.Index(l, "{"); i >= 0 && json.Unmarshal([]byte(l[i:]), &m) == nil {
			ms = append(ms, m)
		}
	}
	return ms
}

func waitFor(t *testing.T, d time.Duration, what string, f func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		ok, last := f()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s within %s; last: %s", what, d, last)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func get(url string) string {
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
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

func writeFile(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// checkNice: the daemon, non-root with SYS_NICE added, lowered every thread
// of it to nice -10 (--runtime.nice) and said so once.
func checkNice(t *testing.T, p *podman, name string) {
	t.Helper()
	pid := strings.TrimSpace(p.run("inspect", "--format", "{{.State.Pid}}", name))
	stats, err := filepath.Glob("/proc/" + pid + "/task/*/stat")
	if err != nil || len(stats) == 0 {
		t.Fatalf("the daemon's threads (pid %s): %v", pid, err)
	}
	for _, f := range stats {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		s := string(b)
		if nice := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])[16]; nice != "-10" {
			t.Errorf("%s: nice %s, want -10", f, nice)
		}
	}
	status, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(status), "\n") {
		if strings.HasPrefix(l, "Cap") || strings.HasPrefix(l, "NoNewPrivs") {
			t.Logf("the daemon's %s", l)
		}
	}
	logs := p.run("logs", name)
	if n := strings.Count(logs, "scheduling priority: nice 0 → -10 on "); n != 1 {
		t.Errorf("the daemon logged its renice %d times, want once:\n%s", n, logs)
	}
}
