package apiserver

import (
	"archive/tar"
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
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
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/clockwatch/clockwatch/test/kubeapiserver/manifests"
)

// EnvKubeletTest opts in to TestKubelet (make test-kubelet).
const EnvKubeletTest = "CLOCKWATCH_KUBELET_TEST"

// envForward makes the test binary a TCP forwarder: qemu's guestfwd runs it
// once per guest connection to the kubernetes Service's address, with the
// connection on stdin and stdout, and it copies that to the kube-apiserver
// on the host's loopback (the value: host:port).
const envForward = "CLOCKWATCH_KUBELET_FORWARD"

const (
	kubeletCache = "/var/cache/clockwatch-test"
	// The guest's network: qemu's restricted user network is the cluster's
	// service network, so that 10.96.0.1:443, the kubernetes Service,
	// reaches the apiserver (guestfwd) without a kube-proxy.
	guestIP     = "10.96.0.15"
	serviceHost = "10.96.0.1"
	pauseImage  = "registry.k8s.io/pause:3.10"
)

// netModules are the guest's network modules (kubelet/modules.sh), in load
// order.
var netModules = []string{"virtio_ring", "virtio", "virtio_pci_legacy_dev", "virtio_pci_modern_dev", "virtio_pci",
	"failover", "net_failover", "virtio_net"}

func TestMain(m *testing.M) {
	if addr := os.Getenv(envForward); addr != "" {
		os.Exit(forward(addr))
	}
	os.Exit(m.Run())
}

func forward(addr string) int {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "forward:", err)
		return 1
	}
	done := make(chan struct{}, 2)
	go func() { io.Copy(c, os.Stdin); c.(*net.TCPConn).CloseWrite(); done <- struct{}{} }()
	go func() { io.Copy(os.Stdout, c); os.Stdout.Close(); done <- struct{}{} }()
	<-done
	<-done
	return 0
}

// TestKubelet runs the DaemonSet on a real kubelet: Debian's containerd and
// runc and the kubelet (built from k8s.io/kubernetes) in a Debian VM booted
// with systemd under qemu (cgroup v2; this host has hybrid cgroup v1 and no
// systemd), against the kube-apiserver, kube-controller-manager (the
// DaemonSet controller) and kube-scheduler on the host's loopback. It applies
// the kustomize base server-side with the image make image writes, imported
// into containerd, and checks that the DaemonSet's pod becomes Ready, that
// /metrics answers on the node's network, that clockwatch, as the manifest's
// ServiceAccount with the token the kubelet projected, sets the Node's
// condition, and that a drill through the node's /run/clockwatch turns it.
func TestKubelet(t *testing.T) {
	if os.Getenv(EnvKubeletTest) != "1" {
		t.Skipf("opt-in: make test-kubelet (%s=1): builds the kubelet, controller manager and scheduler (minutes) and boots a VM", EnvKubeletTest)
	}
	if os.Geteuid() != 0 {
		t.Fatal("the kubelet test needs root (debootstrap, chroot for the guest's root)")
	}
	qemu := require(t, "qemu-system-x86_64")
	require(t, "debootstrap")
	require(t, "cpio")
	kernel := filepath.Join(kubeletCache, "vmlinuz")
	if k := os.Getenv("CLOCKWATCH_TEST_KERNEL"); k != "" {
		kernel = k
	}
	if _, err := os.Stat(kernel); err != nil {
		t.Fatalf("no kernel at %s (scripts/deps.d/40-vm.sh fetches it)", kernel)
	}
	began := time.Now()

	busybox := require(t, "busybox")
	out, err := exec.Command("../kubelet/modules.sh").Output()
	if err != nil {
		t.Fatalf("kubelet/modules.sh: %v", err)
	}
	modDir := strings.TrimSpace(string(out))

	// The root first: it is cached, and debootstrap needs the network, not
	// the CPU.
	rootDone := make(chan error, 1)
	root := kubeletRoot(t)
	go func() {
		out, err := exec.Command("../kubelet/mkroot.sh", root).CombinedOutput()
		if err != nil {
			err = fmt.Errorf("mkroot.sh: %v\n%s", err, out)
		}
		rootDone <- err
	}()

	bin := t.TempDir()
	ldflags := k8sVersionLDFlags(t)
	var builds []string
	for _, c := range []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet"} {
		d := goBuildLD(t, "..", filepath.Join(bin, c), "./cmd/"+c, ldflags)
		builds = append(builds, fmt.Sprintf("%s %s (%.1f MB)", c, d.Round(time.Second), size(filepath.Join(bin, c))))
	}
	d := goBuild(t, "../../..", filepath.Join(bin, "clockwatch"), "./cmd/clockwatch", "GOWORK=", "CGO_ENABLED=0")
	builds = append(builds, "clockwatch "+d.Round(time.Second).String())
	d = goBuild(t, "..", filepath.Join(bin, "pause"), "./kubelet/pause", "CGO_ENABLED=0")
	builds = append(builds, "pause "+d.Round(time.Second).String())
	t.Logf("go build: %s", strings.Join(builds, ", "))

	// The images: clockwatch's as make image writes it, and the sandbox's.
	images := t.TempDir()
	img := exec.Command("./scripts/image.sh")
	img.Dir = "../../.."
	img.Env = append(os.Environ(), "ARCHS=amd64", "DIST="+images, "GOWORK=")
	if out, err := img.CombinedOutput(); err != nil {
		t.Fatalf("scripts/image.sh: %v\n%s", err, out)
	}
	cwImage := filepath.Join(images, "clockwatch-image-amd64.tar")
	ref := imageRefName(t, cwImage) // ghcr.io/clockwatch/clockwatch:TAG, fully qualified
	tag := ref
	if first, _, _ := strings.Cut(ref, "/"); !strings.ContainsAny(first, ".:") || !strings.Contains(ref, "/") {
		tag = "docker.io/library/" + ref // what the CRI resolves "clockwatch:TAG" to
	}
	pause := exec.Command("go", "run", "./internal/ociimage/cmd/ociimage", "-binary", filepath.Join(bin, "pause"),
		"-arch", "amd64", "-version", "3.10", "-name", pauseImage, "-source-date-epoch", "0",
		"-o", filepath.Join(images, "pause.tar"))
	pause.Dir = "../../.."
	pause.Env = append(os.Environ(), "GOWORK=")
	if out, err := pause.CombinedOutput(); err != nil {
		t.Fatalf("the pause image: %v\n%s", err, out)
	}
	t.Logf("images: %s (%.1f MB, named %s), pause (%.1f MB)", cwImage, size(cwImage), ref, size(filepath.Join(images, "pause.tar")))

	// The control plane on the host's loopback.
	cl := StartCluster(t, filepath.Join(bin, "kube-apiserver"))
	t.Logf("kube-apiserver ready %s after its start", cl.Started.Round(time.Millisecond))
	work := t.TempDir()
	adminKC := filepath.Join(work, "admin.kubeconfig")
	writeFile(t, adminKC, kubeconfig(cl.URL, "", true, AdminToken))
	kcm := start(t, filepath.Join(bin, "kube-controller-manager"), []string{"--kubeconfig=" + adminKC,
		"--controllers=daemonset-controller,root-ca-certificate-publisher-controller,serviceaccount-controller",
		"--root-ca-file=" + cl.CAFile, "--leader-elect=false", "--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(freePort(t)), "--cert-dir=" + filepath.Join(work, "kcm"), "--v=1"})
	sched := start(t, filepath.Join(bin, "kube-scheduler"), []string{"--kubeconfig=" + adminKC,
		"--authentication-kubeconfig=" + adminKC, "--authorization-kubeconfig=" + adminKC,
		"--leader-elect=false", "--bind-address=127.0.0.1", "--secure-port=" + strconv.Itoa(freePort(t)),
		"--cert-dir=" + filepath.Join(work, "sched"), "--v=1"})
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("kube-controller-manager:\n%s\nkube-scheduler:\n%s", tail(kcm.out.String()), tail(sched.out.String()))
		}
	})

	admin := &rest.Config{Host: cl.URL, BearerToken: AdminToken, TLSClientConfig: rest.TLSClientConfig{Insecure: true}}
	cs := kubernetes.NewForConfigOrDie(admin)
	a := &applier{t: t, dyn: dynamic.NewForConfigOrDie(admin), cs: cs}
	a.resetMapper()
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Minute)
	defer cancel()

	// The guest: the cached root, then the kubelet, the images and the
	// test's files.
	if err := <-rootDone; err != nil {
		t.Fatal(err)
	}
	ca, err := os.ReadFile(cl.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	overlay := t.TempDir()
	// The archive's "." is the guest's /: it must not keep TempDir's 0700.
	if err := os.Chmod(overlay, 0o755); err != nil {
		t.Fatal(err)
	}
	put := func(src, dst string, mode os.FileMode) {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		putBytes(t, overlay, dst, b, mode)
	}
	put(filepath.Join(bin, "kubelet"), "usr/local/bin/kubelet", 0o755)
	put(busybox, "usr/local/bin/busybox", 0o755)
	for _, m := range netModules {
		put(filepath.Join(modDir, m+".ko"), "root/modules/"+m+".ko", 0o644)
	}
	putBytes(t, overlay, "root/modules/order", []byte(strings.Join(netModules, "\n")+"\n"), 0o644)
	put(filepath.Join(bin, "clockwatch"), "usr/local/bin/clockwatch", 0o755)
	put(cwImage, "root/images/clockwatch.tar", 0o644)
	put(filepath.Join(images, "pause.tar"), "root/images/pause.tar", 0o644)
	tags := ""
	if tag != ref {
		tags = ref + " " + tag + "\n"
	}
	putBytes(t, overlay, "root/images/tags", []byte(tags), 0o644)
	g := "../kubelet/guest/"
	put(g+"cw-kubelet-vmtest", "usr/local/sbin/cw-kubelet-vmtest", 0o755)
	put(g+"cw-kubelet-vmtest.service", "etc/systemd/system/cw-kubelet-vmtest.service", 0o644)
	put(g+"kubelet.service", "etc/systemd/system/kubelet.service", 0o644)
	put(g+"kubelet-config.yaml", "etc/kubernetes/kubelet-config.yaml", 0o644)
	put(g+"containerd-config.toml", "etc/containerd/config.toml", 0o644)
	put(g+"chrony.conf", "etc/chrony/chrony.conf", 0o644)
	put(g+"chrony-server.conf", "etc/chrony/server.conf", 0o644)
	put(g+"chrony-server.service", "etc/systemd/system/chrony-server.service", 0o644)
	putBytes(t, overlay, "etc/kubernetes/ca.crt", ca, 0o644)
	putBytes(t, overlay, "etc/kubernetes/kubelet.kubeconfig",
		[]byte(kubeconfig("https://"+serviceHost+":443", "/etc/kubernetes/ca.crt", false, NodeToken)), 0o600)
	putBytes(t, overlay, "etc/resolv.conf", []byte("nameserver 10.96.0.3\n"), 0o644)
	// containerd copies the node's /etc/hosts into a host-network pod (the
	// first run failed without it: "failed to generate sandbox hosts file
	// ...: open /etc/hosts: no such file or directory"; minbase has none).
	putBytes(t, overlay, "etc/hosts", []byte("127.0.0.1 localhost\n"+guestIP+" "+NodeName+"\n"), 0o644)
	for _, u := range []string{"cw-kubelet-vmtest.service", "chrony-server.service"} {
		wants := filepath.Join(overlay, "etc/systemd/system/multi-user.target.wants")
		if err := os.MkdirAll(wants, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("/etc/systemd/system/"+u, filepath.Join(wants, u)); err != nil {
			t.Fatal(err)
		}
	}
	initrd := filepath.Join(t.TempDir(), "initrd.cpio")
	concatCpio(t, initrd, root, overlay)

	// The manifests, for real, with the image that was imported.
	b, err := manifests.Kustomize(manifests.Root, "deploy/kubernetes")
	if err != nil {
		t.Fatal(err)
	}
	docs, err := manifests.Documents(b)
	if err != nil {
		t.Fatal(err)
	}
	applied := time.Now()
	for _, d := range docs {
		a.apply(ctx, withImage(t, d, ref), false)
	}
	t.Logf("the kustomize base: %d objects applied server-side (image %s)", len(docs), ref)

	// The VM.
	metricsPort := freePort(t)
	vm := bootKubeletVM(ctx, t, qemu, kernel, initrd, cl.URL, metricsPort)
	report := &strings.Builder{}
	fmt.Fprintf(report, "%s\n", strings.Join(builds, ", "))

	// The Node registers, the DaemonSet's pod is scheduled to it and becomes
	// Ready.
	var node *corev1.Node
	if err := vm.waitFor(ctx, 15*time.Minute, func() error {
		n, err := cs.CoreV1().Nodes().Get(ctx, NodeName, metav1.GetOptions{})
		node = n
		return err
	}); err != nil {
		t.Fatalf("the kubelet did not register Node %s: %v", NodeName, err)
	}
	t.Logf("Node %s registered %s after the VM's start (kubelet %s, %s, containerd %s)", NodeName, vm.since().Round(time.Second),
		node.Status.NodeInfo.KubeletVersion, node.Status.NodeInfo.OSImage, node.Status.NodeInfo.ContainerRuntimeVersion)
	registered := time.Now()
	var pod *corev1.Pod
	if err := vm.waitFor(ctx, 15*time.Minute, func() error {
		l, err := cs.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=clockwatch"})
		if err != nil {
			return err
		}
		if len(l.Items) != 1 {
			return fmt.Errorf("%d pods", len(l.Items))
		}
		pod = &l.Items[0]
		for _, c := range pod.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				return nil
			}
		}
		return fmt.Errorf("pod %s on %q: phase %s, %s", pod.Name, pod.Spec.NodeName, pod.Status.Phase, podStates(pod))
	}); err != nil {
		t.Fatalf("the DaemonSet's pod did not become Ready: %v", err)
	}
	ready := time.Now()
	t.Logf("pod %s Ready on %s: %s after the apply, %s after the Node registered",
		pod.Name, pod.Spec.NodeName, ready.Sub(applied).Round(time.Second), ready.Sub(registered).Round(time.Second))
	fmt.Fprintf(report, "pod %s Ready %s after the apply, %s after Node registration; containers: %s\n",
		pod.Name, ready.Sub(applied).Round(time.Second), ready.Sub(registered).Round(time.Second), podStates(pod))
	if pod.Spec.NodeName != NodeName {
		t.Errorf("the pod runs on %q, want %s", pod.Spec.NodeName, NodeName)
	}
	ds, err := cs.AppsV1().DaemonSets(namespace).Get(ctx, "clockwatch", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(report, "DaemonSet: desired %d, scheduled %d, ready %d\n", ds.Status.DesiredNumberScheduled, ds.Status.CurrentNumberScheduled, ds.Status.NumberReady)

	// /metrics on the node's network (hostNetwork), through qemu's hostfwd.
	metrics := ""
	if err := vm.waitFor(ctx, time.Minute, func() error {
		resp, err := http.Get("http://127.0.0.1:" + strconv.Itoa(metricsPort) + "/metrics")
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 || !strings.Contains(string(body), "clockwatch_build_info") {
			return fmt.Errorf("status %d", resp.StatusCode)
		}
		metrics = string(body)
		return nil
	}); err != nil {
		t.Errorf("/metrics on the node: %v", err)
	}
	for _, l := range strings.Split(metrics, "\n") {
		for _, m := range []string{"clockwatch_build_info", "clockwatch_chrony_up", "clockwatch_stepdown_state", "clockwatch_kubernetes_"} {
			if strings.HasPrefix(l, m) {
				fmt.Fprintf(report, "metrics: %s\n", l)
			}
		}
	}

	// The Node's condition, set by clockwatch as its ServiceAccount; then a
	// drill on the node turns it.
	dm := &daemon{t: t, node: NodeName, cs: cs}
	if err := dm.waitCondition(ctx, 2*time.Minute, "False", "ClockTrusted", ""); err != nil {
		t.Error(err)
	}
	dm.recordCondition(ctx, report, "at rest")
	if err := dm.waitCondition(ctx, 3*time.Minute, "True", "Drill", "drill"); err != nil {
		t.Error(err)
	}
	dm.recordCondition(ctx, report, "during the guest's drill")
	if err := dm.waitCondition(ctx, 2*time.Minute, "False", "ClockTrusted", ""); err != nil {
		t.Error(err)
	}
	dm.recordCondition(ctx, report, "after the drill")
	for _, ev := range []string{"ClockStepdown", "ClockResumed"} {
		if err := dm.waitEvent(ctx, ev, "Normal", "drill: ", 1); err != nil {
			t.Error(err)
		}
	}
	evs, _ := dm.events(ctx)
	for _, e := range evs {
		fmt.Fprintf(report, "Event on the Node: %s %s x%d source=%s %q\n", e.Type, e.Reason, e.Count, e.Source.Component, e.Message)
	}
	if n, err := cs.CoreV1().Nodes().Get(ctx, NodeName, metav1.GetOptions{}); err == nil {
		for _, mf := range n.ManagedFields {
			if mf.Subresource == "status" && strings.Contains(string(mf.FieldsV1.Raw), "ClockUntrusted") {
				fmt.Fprintf(report, "the condition's field manager: %s (%s)\n", mf.Manager, mf.Operation)
			}
		}
	}
	_ = vm.waitFor(ctx, time.Minute, func() error {
		if vm.fact("done") != "1" {
			return errors.New("not yet")
		}
		return nil
	})
	for _, c := range []struct{ key, want string }{
		{"systemd_pid1", "systemd"}, {"cgroup_fs", "cgroup2fs"}, {"readyz", "HTTP/1.0 200 OK"},
		{"cw_uid", "65532\t65532\t65532\t65532"}, {"cw_cap_eff", "0000000000000000"}, {"cw_seccomp", "2"},
		// SYS_NICE (bit 23) permitted through the image's file capability,
		// not ambient, used once: every thread at --runtime.nice's -10.
		{"cw_cap_prm", "0000000000800000"}, {"cw_cap_amb", "0000000000000000"}, {"cw_nice", "-10 "},
		{"cw_no_new_privs", "1"}, {"status_rc", "0"}, {"drill_rc", "0"},
	} {
		if got := vm.fact(c.key); got != c.want {
			t.Errorf("guest: %s = %q, want %q", c.key, got, c.want)
		}
	}
	// The node's bus drops the DaemonSet's uid, unknown to the node: the
	// pod's status says so and what to do (docs/kubernetes.md, "D-Bus").
	if st := vm.withPrefix("cwstatus: "); !strings.Contains(st, "the bus closed it") || !strings.Contains(st, "make uid 65532 known") {
		t.Errorf("clockwatch status in the pod does not say why timesyncd cannot be read:\n%s", st)
	}
	for _, k := range vm.keys() {
		fmt.Fprintf(report, "guest: %s=%s\n", k, vm.fact(k))
	}
	t.Logf("the whole test: %s\n%s", time.Since(began).Round(time.Second), report.String())
	t.Logf("clockwatch status in the pod (kubectl exec):\n%s", vm.withPrefix("cwstatus: "))
	t.Logf("clockwatch's log in the pod (kubectl logs):\n%s", vm.withPrefix("cwlog: "))
	if t.Failed() {
		t.Logf("the guest's console (last lines):\n%s", vm.tail(300))
	}
}

// goBuildLD is goBuild with linker flags.
func goBuildLD(t *testing.T, dir, out, pkg, ldflags string) time.Duration {
	t.Helper()
	began := time.Now()
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags", ldflags, "-o", out, pkg)
	cmd.Dir = dir
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, b)
	}
	return time.Since(began)
}

// k8sVersionLDFlags stamps the Kubernetes binaries with the release go.mod
// requires, as the release build does (hack/lib/version.sh): without it the
// Node reports kubelet v0.0.0-master.
func k8sVersionLDFlags(t *testing.T) string {
	t.Helper()
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Version}}", "k8s.io/kubernetes")
	cmd.Dir = ".."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -m k8s.io/kubernetes: %v", err)
	}
	v := strings.TrimSpace(string(out)) // v1.37.2
	major, minor, _ := strings.Cut(strings.TrimPrefix(v, "v"), ".")
	minor, _, _ = strings.Cut(minor, ".")
	var flags []string
	for k, val := range map[string]string{"gitVersion": v, "gitMajor": major, "gitMinor": minor, "gitTreeState": "clean"} {
		flags = append(flags, "-X=k8s.io/component-base/version."+k+"="+val)
	}
	slices.Sort(flags)
	return strings.Join(flags, " ")
}

func size(path string) float64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return float64(fi.Size()) / 1e6
}

// kubeletRoot is the cached guest root's path, named after mkroot.sh.
func kubeletRoot(t *testing.T) string {
	t.Helper()
	script, err := os.ReadFile("../kubelet/mkroot.sh")
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(script)
	return filepath.Join(kubeletCache, fmt.Sprintf("kubelet-root-%x.cpio", sum[:6]))
}

// imageRefName is the reference an OCI archive names its image by.
func imageRefName(t *testing.T, archive string) string {
	t.Helper()
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err != nil {
			t.Fatalf("%s: no index.json: %v", archive, err)
		}
		if h.Name != "index.json" {
			continue
		}
		var idx struct {
			Manifests []struct {
				Annotations map[string]string `json:"annotations"`
			} `json:"manifests"`
		}
		if err := json.NewDecoder(tr).Decode(&idx); err != nil {
			t.Fatal(err)
		}
		for _, m := range idx.Manifests {
			if n := m.Annotations["org.opencontainers.image.ref.name"]; n != "" {
				return n
			}
		}
		t.Fatalf("%s: no org.opencontainers.image.ref.name", archive)
	}
}

func kubeconfig(server, caFile string, insecure bool, token string) string {
	tls := "certificate-authority: " + caFile
	if insecure {
		tls = "insecure-skip-tls-verify: true"
	}
	return fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: test
  cluster:
    server: %s
    %s
users:
- name: test
  user:
    token: %s
contexts:
- name: test
  context: {cluster: test, user: test}
current-context: test
`, server, tls, token)
}

func putBytes(t *testing.T, overlay, dst string, b []byte, mode os.FileMode) {
	t.Helper()
	p := filepath.Join(overlay, dst)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, mode); err != nil {
		t.Fatal(err)
	}
}

// concatCpio writes the root's archive followed by the overlay's (the
// kernel unpacks concatenated archives in order).
func concatCpio(t *testing.T, out, root, overlay string) {
	t.Helper()
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	base, err := os.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	defer base.Close()
	if _, err := io.Copy(f, base); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", "-c", "find . -print0 | cpio --null -o -H newc --quiet")
	cmd.Dir = overlay
	cmd.Stdout = f
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("cpio: %v\n%s", err, stderr.String())
	}
}

// withImage sets every container's image of a DaemonSet to ref.
func withImage(t *testing.T, doc []byte, ref string) []byte {
	t.Helper()
	var u unstructured.Unstructured
	if err := u.UnmarshalJSON(doc); err != nil {
		t.Fatal(err)
	}
	if u.GetKind() != "DaemonSet" {
		return doc
	}
	for _, field := range []string{"initContainers", "containers"} {
		cs, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", field)
		for _, c := range cs {
			c.(map[string]any)["image"] = ref
		}
		if err := unstructured.SetNestedSlice(u.Object, cs, "spec", "template", "spec", field); err != nil {
			t.Fatal(err)
		}
	}
	b, err := u.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func podStates(p *corev1.Pod) string {
	var s []string
	for _, cs := range append(slices.Clone(p.Status.InitContainerStatuses), p.Status.ContainerStatuses...) {
		st := "?"
		switch {
		case cs.State.Running != nil:
			st = "running"
		case cs.State.Waiting != nil:
			st = "waiting " + cs.State.Waiting.Reason + " " + cs.State.Waiting.Message
		case cs.State.Terminated != nil:
			st = fmt.Sprintf("terminated %s exit %d", cs.State.Terminated.Reason, cs.State.Terminated.ExitCode)
		}
		s = append(s, fmt.Sprintf("%s: %s ready=%v restarts=%d", cs.Name, st, cs.Ready, cs.RestartCount))
	}
	return strings.Join(s, "; ")
}

func (d *daemon) recordCondition(ctx context.Context, report *strings.Builder, when string) {
	if c, _ := d.condition(ctx); c != nil {
		fmt.Fprintf(report, "%s, Node %s condition: %s=%s reason=%s message=%q lastTransitionTime=%s\n", when, d.node,
			c.Type, c.Status, c.Reason, c.Message, c.LastTransitionTime.UTC().Format(time.RFC3339))
	}
}

// kubeletVM is the running guest: its console's facts and lines.
type kubeletVM struct {
	mu      sync.Mutex
	facts   map[string]string
	console []string
	started time.Time
	exited  chan struct{}
	err     error
}

func (v *kubeletVM) fact(k string) string {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.facts[k]
}

func (v *kubeletVM) keys() []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	var ks []string
	for k := range v.facts {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

func (v *kubeletVM) tail(n int) string {
	v.mu.Lock()
	defer v.mu.Unlock()
	return strings.Join(v.console[max(0, len(v.console)-n):], "\n")
}

// withPrefix returns the console's lines that start with prefix, without it.
func (v *kubeletVM) withPrefix(prefix string) string {
	v.mu.Lock()
	defer v.mu.Unlock()
	var b strings.Builder
	for _, l := range v.console {
		if rest, ok := strings.CutPrefix(l, prefix); ok {
			b.WriteString(rest)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

func (v *kubeletVM) since() time.Duration { return time.Since(v.started) }

// waitFor polls f until it succeeds, d passes or the VM exits.
func (v *kubeletVM) waitFor(ctx context.Context, d time.Duration, f func() error) error {
	deadline := time.Now().Add(d)
	for {
		err := f()
		if err == nil {
			return nil
		}
		select {
		case <-v.exited:
			return fmt.Errorf("%w (the VM exited: %v)", err, v.err)
		default:
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return err
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func bootKubeletVM(ctx context.Context, t *testing.T, qemu, kernel, initrd, apiURL string, metricsPort int) *kubeletVM {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	api := strings.TrimPrefix(apiURL, "https://")
	vmCtx, stop := context.WithCancel(ctx)
	nic := "user,model=virtio-net-pci,restrict=on,net=10.96.0.0/24,host=10.96.0.2" +
		",guestfwd=tcp:" + serviceHost + ":443-cmd:" + self +
		",hostfwd=tcp:127.0.0.1:" + strconv.Itoa(metricsPort) + "-" + guestIP + ":9847"
	cmd := exec.CommandContext(vmCtx, qemu,
		"-accel", "tcg", "-m", "4096", "-smp", "2",
		"-kernel", kernel, "-initrd", initrd,
		"-append", "console=ttyS0 rdinit=/lib/systemd/systemd panic=-1 loglevel=4 systemd.show_status=0",
		"-display", "none", "-serial", "stdio", "-monitor", "none", "-nic", nic, "-no-reboot")
	cmd.Env = append(os.Environ(), envForward+"="+api)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	logPath := filepath.Join(t.TempDir(), "console.log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	v := &kubeletVM{facts: map[string]string{}, started: time.Now(), exited: make(chan struct{})}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if p := os.Getenv("CLOCKWATCH_KUBELET_CONSOLE"); p != "" {
		// Keep the console where a person can follow it.
		if f, err := os.Create(p); err == nil {
			logf.Close()
			logf = f
		}
	}
	go func() {
		sc := bufio.NewScanner(io.TeeReader(out, logf))
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			line := strings.TrimRight(sc.Text(), "\r")
			v.mu.Lock()
			v.console = append(v.console, line)
			if rest, ok := strings.CutPrefix(line, "CWTEST "); ok {
				k, val, _ := strings.Cut(rest, "=")
				v.facts[k] = val
			}
			v.mu.Unlock()
		}
		v.err = cmd.Wait()
		logf.Close()
		close(v.exited)
	}()
	t.Cleanup(func() {
		stop()
		<-v.exited
		t.Logf("VM ran %s", v.since().Round(time.Second))
	})
	return v
}
