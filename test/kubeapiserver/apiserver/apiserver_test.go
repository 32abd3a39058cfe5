package apiserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	"github.com/clockwatch/clockwatch/test/kubeapiserver/manifests"
)

// PrometheusOperatorVersion is the prometheus-operator release whose CRDs
// (example/prometheus-operator-crd in its Go module) the dry run installs:
// the one whose API types (pkg/apis/monitoring) go.mod requires.
const PrometheusOperatorVersion = "v0.85.0"

const (
	namespace = "clockwatch"
	saName    = "clockwatch"
	roleName  = "clockwatch"
)

func TestAPIServer(t *testing.T) {
	if os.Getenv("CLOCKWATCH_KUBE_APISERVER_TEST") != "1" {
		t.Skip("opt-in: make test-kubernetes (CLOCKWATCH_KUBE_APISERVER_TEST=1); building kube-apiserver takes minutes")
	}
	began := time.Now()
	bin := t.TempDir()
	apiBuild := goBuild(t, "..", filepath.Join(bin, "kube-apiserver"), "./cmd/kube-apiserver")
	// The daemon is built in its own module, with the repository's
	// workspace (GOWORK=off is for this module only).
	cwBuild := goBuild(t, "../../..", filepath.Join(bin, "clockwatch"), "./cmd/clockwatch", "GOWORK=", "CGO_ENABLED=0")
	t.Logf("go build: kube-apiserver %s, clockwatch %s", apiBuild.Round(time.Second), cwBuild.Round(time.Second))

	cl := StartCluster(t, filepath.Join(bin, "kube-apiserver"))
	t.Logf("kube-apiserver ready %s after its start", cl.Started.Round(time.Millisecond))
	admin := &rest.Config{Host: cl.URL, BearerToken: AdminToken, TLSClientConfig: rest.TLSClientConfig{Insecure: true}}
	cs := kubernetes.NewForConfigOrDie(admin)
	dyn := dynamic.NewForConfigOrDie(admin)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	a := &applier{t: t, dyn: dyn, cs: cs}
	a.resetMapper()
	// prometheus-operator's CRDs, from its Go module.
	for _, crd := range []string{"podmonitors", "servicemonitors", "prometheusrules"} {
		a.applyFile(ctx, filepath.Join(crdDir(t), "monitoring.coreos.com_"+crd+".yaml"), false)
	}
	if err := waitFor(ctx, 30*time.Second, func() error {
		a.resetMapper()
		_, err := a.mapper.RESTMapping(schemaGK("monitoring.coreos.com", "PrometheusRule"), "v1")
		return err
	}); err != nil {
		t.Fatalf("prometheus-operator's CRDs not served: %v", err)
	}

	// Every render, dry run (the namespaces exist for real: a dry run of a
	// namespaced object needs its namespace).
	for _, ns := range []string{namespace, "monitoring"} {
		a.apply(ctx, mustJSON(t, map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns}}), false)
	}
	renders := map[string][]byte{}
	for _, dir := range []string{"deploy/kubernetes", "deploy/kubernetes/prometheus-operator"} {
		b, err := manifests.Kustomize(manifests.Root, dir)
		if err != nil {
			t.Fatal(err)
		}
		renders["kustomize "+dir] = b
	}
	if helm, err := manifests.Helm(); err == nil {
		b, err := manifests.HelmTemplate(helm, manifests.Root, "clockwatch", "monitoring",
			"podMonitor.enabled=true", "prometheusRule.enabled=true", "chrony.gid=101", "ptp.enabled=true")
		if err != nil {
			t.Fatal(err)
		}
		renders["helm everything on"] = b
	} else if os.Getenv("CI") == "true" {
		t.Fatal(err)
	}
	for name, b := range renders {
		docs, err := manifests.Documents(b)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range docs {
			a.apply(ctx, d, true)
		}
		t.Logf("%s: %d objects accepted by the server-side dry run", name, len(docs))
	}
	// The base's ServiceAccount and RBAC, for real: the transport runs as
	// them.
	base, _ := manifests.Documents(renders["kustomize deploy/kubernetes"])
	var role *rbacv1.ClusterRole
	for _, d := range base {
		o, err := manifests.Decode(d)
		if err != nil {
			t.Fatal(err)
		}
		switch o.Kind {
		case "ServiceAccount", "ClusterRole", "ClusterRoleBinding":
			a.apply(ctx, d, false)
		}
		if r, ok := o.Value.(*rbacv1.ClusterRole); ok {
			role = r
		}
	}
	if role == nil {
		t.Fatal("no ClusterRole in deploy/kubernetes")
	}

	// The ServiceAccount's token (TokenRequest, as the kubelet projects it
	// into the pod) in a kubeconfig's token file.
	exp := int64(3600)
	tr, err := cs.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, saName,
		&authv1.TokenRequest{Spec: authv1.TokenRequestSpec{ExpirationSeconds: &exp}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("TokenRequest for %s/%s: %v", namespace, saName, err)
	}
	work := t.TempDir()
	tokenFile := filepath.Join(work, "token")
	writeFile(t, tokenFile, tr.Status.Token)
	kubeconfig := filepath.Join(work, "kubeconfig")
	writeFile(t, kubeconfig, fmt.Sprintf(`apiVersion: v1
kind: Config
current-context: sa
clusters:
- name: test
  cluster:
    server: %s
    certificate-authority: %s
contexts:
- name: sa
  context: {cluster: test, user: clockwatch}
users:
- name: clockwatch
  user:
    tokenFile: %s
`, cl.URL, cl.CAFile, tokenFile))

	chrony := StartChronyd(t, 0)
	env := &transportEnv{t: t, bin: filepath.Join(bin, "clockwatch"), kubeconfig: kubeconfig, chrony: chrony, cs: cs}

	// The manifest's ClusterRole: the condition on a drill, the Events,
	// then an offset from chronyd.
	report := &strings.Builder{}
	t.Run("transport", func(t *testing.T) {
		env.t, a.t = t, t
		node := env.node(ctx, "node-a")
		d := env.daemon(ctx, node)
		if err := d.check(ctx, report); err != nil {
			t.Fatal(err)
		}
		// The API server down: the socket's clients get the drill at once,
		// and the Node shows the state as it is when it is back.
		cl.Stop()
		sent := time.Now()
		d.drill(t)
		if err := waitFor(ctx, 5*time.Second, func() error {
			if strings.Count(d.watch.out.String(), `"type":"stepdown"`) < 3 {
				return errors.New("no stepdown on the socket")
			}
			return nil
		}); err != nil {
			t.Fatalf("with the API server down: %v\n%s", err, d.watch.out.String())
		}
		fmt.Fprintf(report, "API server down: the drill's stepdown reached the socket's subscriber %s after the request\n", time.Since(sent).Round(time.Millisecond))
		time.Sleep(3 * time.Second) // the drill's resume, the API server still down
		cl.Start()
		back := time.Now()
		if err := d.waitCondition(ctx, 90*time.Second, "False", "ClockTrusted", ""); err != nil {
			t.Fatalf("after the outage: %v", err)
		}
		fmt.Fprintf(report, "API server back: the condition shows the latest state (False ClockTrusted) %s after its restart\n", time.Since(back).Round(time.Millisecond))

		// A real offset: chronyd believes the clock 2 s off.
		chrony.Restart(2)
		if err := d.waitCondition(ctx, 60*time.Second, "True", "Offset", "offset"); err != nil {
			t.Fatal(err)
		}
		if err := d.waitEvent(ctx, "ClockStepdown", "Warning", "reason offset", 1); err != nil {
			t.Fatal(err)
		}
		d.record(ctx, report, "after chronyd's 2 s offset")
		chrony.Restart(0)
	})

	// Without any one of the ClusterRole's verbs, the same check fails.
	for i, rule := range role.Rules {
		for _, verb := range rule.Verbs {
			name := rule.Resources[0] + " " + verb
			t.Run("without "+name, func(t *testing.T) {
				env.t, a.t = t, t
				less := role.DeepCopy()
				less.ResourceVersion = ""
				less.Rules[i].Verbs = slices.DeleteFunc(slices.Clone(rule.Verbs), func(v string) bool { return v == verb })
				if len(less.Rules[i].Verbs) == 0 {
					less.Rules = slices.Delete(less.Rules, i, i+1) // a rule needs a verb
				}
				a.apply(ctx, mustJSON(t, less), false)
				defer a.apply(ctx, mustJSON(t, role), false)
				// RBAC's authorizer reads the role from an informer: give it
				// the change.
				time.Sleep(2 * time.Second)
				node := env.node(ctx, "node-no-"+strings.NewReplacer("/", "-", " ", "-").Replace(name))
				d := env.daemon(ctx, node)
				err := d.check(ctx, &strings.Builder{})
				if err == nil {
					t.Fatalf("the transport works without %q on %s: the ClusterRole is not minimal", verb, rule.Resources[0])
				}
				t.Logf("without %s the check fails, as it must: %v", name, err)
				// The Node list is the peers' (peers.kubernetes), counted in
				// their discovery_up, not in the transport's requests.
				if verb == "list" {
					if m := d.metric("clockwatch_peer_discovery_up", `place="kubernetes"} 0`); m == "" {
						t.Errorf("clockwatch_peer_discovery_up{place=\"kubernetes\"} is not 0:\n%s", d.metrics())
					}
				} else if m := d.metric("clockwatch_kubernetes_requests_total", `result="403"`); m == "" {
					t.Errorf("no 403 counted in clockwatch_kubernetes_requests_total:\n%s", d.metrics())
				}
			})
		}
	}
	a.t = t
	if os.Getenv("CLOCKWATCH_K8S_BENCH") == "1" {
		t.Run("cost", func(t *testing.T) {
			env.t = t
			costOffOn(ctx, t, env, report)
		})
	}
	t.Logf("what the Node and the subscriber received:\n%s", report.String())
	if p := os.Getenv("CLOCKWATCH_K8S_REPORT"); p != "" {
		writeFile(t, p, report.String())
	}
	t.Logf("TestAPIServer: %s in all", time.Since(began).Round(time.Second))
}

func crdDir(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "mod", "download", "-json", "github.com/prometheus-operator/prometheus-operator@"+PrometheusOperatorVersion).Output()
	if err != nil {
		t.Fatalf("go mod download prometheus-operator: %v", err)
	}
	var m struct{ Dir string }
	if err := json.Unmarshal(out, &m); err != nil || m.Dir == "" {
		t.Fatalf("go mod download: %v %s", err, out)
	}
	return filepath.Join(m.Dir, "example/prometheus-operator-crd")
}

// transportEnv starts clockwatch daemons against the cluster.
type transportEnv struct {
	t          *testing.T
	bin        string
	kubeconfig string
	chrony     *Chronyd
	cs         *kubernetes.Clientset
}

func (e *transportEnv) node(ctx context.Context, name string) string {
	e.t.Helper()
	_, err := e.cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatalf("creating Node %s: %v", name, err)
	}
	return name
}

type daemon struct {
	t          *testing.T
	bin        string
	node       string
	socket     string
	metricsURL string
	proc       *proc
	watch      *proc
	cs         *kubernetes.Clientset
}

func (e *transportEnv) daemon(ctx context.Context, node string) *daemon {
	return e.start(ctx, node)
}

// daemonOff is a clockwatch with the transport off, for the cost table.
func (e *transportEnv) daemonOff(ctx context.Context) *daemon { return e.start(ctx, "") }

func (e *transportEnv) start(ctx context.Context, node string) *daemon {
	t := e.t
	t.Helper()
	dir := t.TempDir()
	port := freePort(t)
	conf := filepath.Join(dir, "clockwatch.yml")
	writeFile(t, conf, fmt.Sprintf(`chrony:
  address: %s
  conf_path: ""
stepdown:
  socket: %s
  hold_down: 1s
  # chronyd -x never disciplines this host's kernel clock: judge chronyd.
  triggers:
    error_bound:
      enabled: false
    unsynchronized:
      enabled: false
journal:
  dir: %s
clockbound:
  enabled: false
`, e.chrony.Socket, filepath.Join(dir, "stepdown.sock"), filepath.Join(dir, "state")))
	if node != "" {
		// The fleet's clock from the Node list (list nodes): its peers are
		// the Nodes' InternalIPs.
		f, err := os.OpenFile(conf, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(f, "peers:\n  kubernetes: true\n  listen: \"127.0.0.1:%d\"\n", freeUDPPort(t))
		f.Close()
	}
	d := &daemon{t: t, bin: e.bin, node: node, socket: filepath.Join(dir, "stepdown.sock"), cs: e.cs,
		metricsURL: "http://127.0.0.1:" + strconv.Itoa(port) + "/metrics"}
	args := []string{"--config.file=" + conf, "--web.listen-address=127.0.0.1:" + strconv.Itoa(port)}
	if node != "" {
		args = append(args, "--kubernetes.node-name="+node, "--kubernetes.kubeconfig="+e.kubeconfig)
	}
	d.proc = start(t, e.bin, args)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("clockwatch's log:\n%s", tail(d.proc.out.String()))
		}
	})
	if err := waitFor(ctx, 20*time.Second, func() error {
		if _, err := os.Stat(d.socket); err != nil {
			return err
		}
		return nil
	}); err != nil {
		t.Fatalf("clockwatch did not open its socket: %v\n%s", err, d.proc.out.String())
	}
	d.watch = start(t, e.bin, []string{"watch", "--json", "--socket", d.socket})
	return d
}

// drill starts a drill that holds the stepdown for 3 s; clockwatch drill
// returns once it is over, so it runs beside the test.
func (d *daemon) drill(t *testing.T) *proc {
	t.Helper()
	return start(t, d.bin, []string{"drill", "--socket", d.socket, "--hold", "3s"})
}

// check is what the transport must do with the manifest's RBAC: the
// condition False once chronyd is read, True (Drill) on a drill and False
// again, and an Event for the drill's stepdown and resume; a second drill
// raises the first one's count. It returns what went wrong.
func (d *daemon) check(ctx context.Context, report *strings.Builder) error {
	if err := d.waitCondition(ctx, 30*time.Second, "False", "ClockTrusted", ""); err != nil {
		return err
	}
	// The peers' Node list (list nodes) worked.
	if err := waitFor(ctx, 30*time.Second, func() error {
		if d.metric("clockwatch_peer_discovery_up", `place="kubernetes"} 1`) == "" {
			return errors.New("not yet")
		}
		return nil
	}); err != nil {
		return fmt.Errorf("node %s: the Node list for peers.kubernetes did not work: %s", d.node, d.metric("clockwatch_peer_discovery_up", ""))
	}
	d.record(ctx, report, "at start")
	dr := d.drill(d.t)
	if err := d.waitCondition(ctx, 10*time.Second, "True", "Drill", "drill"); err != nil {
		return err
	}
	d.record(ctx, report, "during the drill")
	if err := d.waitCondition(ctx, 15*time.Second, "False", "ClockTrusted", ""); err != nil {
		return err
	}
	<-dr.done
	for _, ev := range []struct{ reason, typ string }{{"ClockStepdown", "Normal"}, {"ClockResumed", "Normal"}} {
		if err := d.waitEvent(ctx, ev.reason, ev.typ, "drill: ", 1); err != nil {
			return err
		}
	}
	dr = d.drill(d.t)
	<-dr.done
	if err := d.waitEvent(ctx, "ClockStepdown", "Normal", "drill: ", 2); err != nil {
		return fmt.Errorf("the second drill's stepdown did not raise the first one's count: %w", err)
	}
	d.record(ctx, report, "after two drills")
	return nil
}

func (d *daemon) condition(ctx context.Context) (*corev1.NodeCondition, error) {
	n, err := d.cs.CoreV1().Nodes().Get(ctx, d.node, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	for _, c := range n.Status.Conditions {
		if c.Type == "ClockUntrusted" {
			return &c, nil
		}
	}
	return nil, nil
}

func (d *daemon) waitCondition(ctx context.Context, timeout time.Duration, status, reason, message string) error {
	var last *corev1.NodeCondition
	err := waitFor(ctx, timeout, func() error {
		c, err := d.condition(ctx)
		if err != nil {
			return err
		}
		last = c
		if c == nil || string(c.Status) != status || c.Reason != reason || !strings.Contains(c.Message, message) {
			return errors.New("not yet")
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("node %s: no ClockUntrusted=%s reason %s within %s; last %+v", d.node, status, reason, timeout, last)
	}
	return nil
}

func (d *daemon) events(ctx context.Context) ([]corev1.Event, error) {
	l, err := d.cs.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.kind=Node,involvedObject.name=" + d.node})
	if err != nil {
		return nil, err
	}
	return l.Items, nil
}

func (d *daemon) waitEvent(ctx context.Context, reason, typ, message string, count int32) error {
	var seen []string
	err := waitFor(ctx, 15*time.Second, func() error {
		evs, err := d.events(ctx)
		if err != nil {
			return err
		}
		seen = seen[:0]
		for _, e := range evs {
			seen = append(seen, fmt.Sprintf("%s %s x%d %q", e.Type, e.Reason, e.Count, e.Message))
			if e.Reason == reason && e.Type == typ && strings.Contains(e.Message, message) && e.Count >= count &&
				e.Source.Component == "clockwatch" && e.InvolvedObject.Kind == "Node" {
				return nil
			}
		}
		return errors.New("not yet")
	})
	if err != nil {
		return fmt.Errorf("node %s: no %s Event %s (%q, count %d); seen %v", d.node, typ, reason, message, count, seen)
	}
	return nil
}

// record writes the Node's condition and Events, and what the socket's
// subscriber received, to the report.
func (d *daemon) record(ctx context.Context, report *strings.Builder, when string) {
	c, _ := d.condition(ctx)
	if c != nil {
		fmt.Fprintf(report, "%s, Node %s condition: %s=%s reason=%s message=%q lastTransitionTime=%s lastHeartbeatTime=%s\n", when, d.node,
			c.Type, c.Status, c.Reason, c.Message, c.LastTransitionTime.UTC().Format(time.RFC3339), c.LastHeartbeatTime.UTC().Format(time.RFC3339))
	}
	evs, _ := d.events(ctx)
	for _, e := range evs {
		fmt.Fprintf(report, "%s, Event: %s %s x%d source=%s %q\n", when, e.Type, e.Reason, e.Count, e.Source.Component, e.Message)
	}
	fmt.Fprintf(report, "%s, the socket's subscriber:\n%s", when, d.watch.out.String())
}

func (d *daemon) metrics() string {
	resp, err := http.Get(d.metricsURL)
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func (d *daemon) metric(name, label string) string {
	for _, l := range strings.Split(d.metrics(), "\n") {
		if strings.HasPrefix(l, name) && strings.Contains(l, label) {
			return l
		}
	}
	return ""
}

// applier applies objects with server-side apply.
type applier struct {
	t      *testing.T
	dyn    dynamic.Interface
	cs     *kubernetes.Clientset
	mapper *restmapper.DeferredDiscoveryRESTMapper
}

func (a *applier) resetMapper() {
	a.mapper = restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(a.cs.Discovery()))
}

func (a *applier) applyFile(ctx context.Context, path string, dryRun bool) {
	a.t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		a.t.Fatal(err)
	}
	docs, err := manifests.Documents(b)
	if err != nil {
		a.t.Fatal(err)
	}
	for _, d := range docs {
		a.apply(ctx, d, dryRun)
	}
}

func (a *applier) apply(ctx context.Context, doc []byte, dryRun bool) {
	a.t.Helper()
	var u unstructured.Unstructured
	if err := u.UnmarshalJSON(doc); err != nil {
		a.t.Fatal(err)
	}
	gvk := u.GroupVersionKind()
	m, err := a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		a.t.Fatalf("%s %s: %v", gvk, u.GetName(), err)
	}
	var ri dynamic.ResourceInterface = a.dyn.Resource(m.Resource)
	if m.Scope.Name() == "namespace" {
		ri = a.dyn.Resource(m.Resource).Namespace(u.GetNamespace())
	}
	opts := metav1.PatchOptions{FieldManager: "clockwatch-test", Force: ptr(true)}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	if _, err := ri.Patch(ctx, u.GetName(), types.ApplyPatchType, doc, opts); err != nil {
		a.t.Fatalf("apply %s %s/%s (dry run %v): %v", gvk.Kind, u.GetNamespace(), u.GetName(), dryRun, err)
	}
}

func ptr[T any](v T) *T { return &v }

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := v.(*rbacv1.ClusterRole); ok {
		// A typed object marshals without its type: add it.
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		m["apiVersion"], m["kind"] = "rbac.authorization.k8s.io/v1", "ClusterRole"
		_ = o
		b, _ = json.Marshal(m)
	}
	return b
}

func writeFile(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
}
