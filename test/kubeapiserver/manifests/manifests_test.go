package manifests

import (
	"archive/tar"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"
)

// renders are every way a user gets the manifests.
func renders(t *testing.T) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for _, dir := range []string{"deploy/kubernetes", "deploy/kubernetes/prometheus-operator"} {
		b, err := Kustomize(Root, dir)
		if err != nil {
			t.Fatal(err)
		}
		out["kustomize "+dir] = b
	}
	helm := requireHelm(t)
	for name, set := range map[string][]string{
		"helm defaults": nil,
		"helm everything on": {"podMonitor.enabled=true", "prometheusRule.enabled=true", "chrony.gid=101", "ptp.enabled=true",
			"image.tag=1.2.3", "config.stepdown.hold_down=1m"},
		"helm kubernetes off": {"kubernetes.enabled=false", "timesyncd.enabled=false", "dashboard.enabled=false"},
	} {
		b, err := HelmTemplate(helm, Root, "clockwatch", "monitoring", set...)
		if err != nil {
			t.Fatal(err)
		}
		out[name] = b
	}
	return out
}

func requireHelm(t *testing.T) string {
	t.Helper()
	h, err := Helm()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true and a test prerequisite is missing: %v", err)
		}
		t.Skip(err)
	}
	return h
}

func TestHelmLint(t *testing.T) {
	helm := requireHelm(t)
	out, err := exec.Command(helm, "lint", "--strict", Root+"/deploy/helm/clockwatch").CombinedOutput()
	if err != nil {
		t.Fatalf("helm lint --strict: %v\n%s", err, out)
	}
}

// Every object of every render decodes strictly into its type, and the
// DaemonSet keeps the security context and mounts the podman test
// (test/container) runs the image with.
func TestRenderDecodeStrictly(t *testing.T) {
	for name, b := range renders(t) {
		t.Run(name, func(t *testing.T) {
			docs, err := Documents(b)
			if err != nil {
				t.Fatal(err)
			}
			var kinds []string
			var ds *appsv1.DaemonSet
			var role *rbacv1.ClusterRole
			var cfg *corev1.ConfigMap
			for _, d := range docs {
				o, err := Decode(d)
				if err != nil {
					t.Fatal(err)
				}
				kinds = append(kinds, o.Kind)
				switch v := o.Value.(type) {
				case *appsv1.DaemonSet:
					ds = v
				case *rbacv1.ClusterRole:
					role = v
				case *corev1.ConfigMap:
					if _, ok := v.Data["clockwatch.yml"]; ok {
						cfg = v
					}
				}
			}
			if ds == nil || cfg == nil {
				t.Fatalf("no DaemonSet or no configuration in %v", kinds)
			}
			checkDaemonSet(t, ds, !strings.Contains(name, "kubernetes off"))
			var c map[string]any
			if err := yaml.UnmarshalStrict([]byte(cfg.Data["clockwatch.yml"]), &c); err != nil {
				t.Errorf("clockwatch.yml: %v", err)
			}
			if strings.Contains(name, "kubernetes off") {
				if role != nil {
					t.Errorf("a ClusterRole with the transport off")
				}
				return
			}
			if role == nil {
				t.Fatalf("no ClusterRole in %v", kinds)
			}
			var rules []string
			for _, r := range role.Rules {
				for _, res := range r.Resources {
					for _, v := range r.Verbs {
						rules = append(rules, fmt.Sprintf("%s/%s %s", strings.Join(r.APIGroups, ","), res, v))
					}
				}
			}
			// list nodes: peers.kubernetes finds the fleet's peers (docs/peers.md).
			if diff := cmp.Diff([]string{"/nodes get", "/nodes list", "/nodes/status patch", "/events create", "/events patch"}, rules); diff != "" {
				t.Errorf("the ClusterRole is not the minimal one (-want +got):\n%s", diff)
			}
		})
	}
}

// examples/kubernetes' application pod decodes strictly, mounts the node's
// /run/clockwatch read-only, is in the socket's group and not root.
func TestExamplePod(t *testing.T) {
	b, err := os.ReadFile(Root + "/examples/kubernetes/app-pod.yaml")
	if err != nil {
		t.Fatal(err)
	}
	docs, err := Documents(b)
	if err != nil || len(docs) != 1 {
		t.Fatalf("%d documents, %v", len(docs), err)
	}
	o, err := Decode(docs[0])
	if err != nil {
		t.Fatal(err)
	}
	p, ok := o.Value.(*corev1.Pod)
	if !ok {
		t.Fatalf("a %s, want a Pod", o.Kind)
	}
	sc := p.Spec.SecurityContext
	if sc == nil || !slices.Contains(sc.SupplementalGroups, 65532) || sc.RunAsUser == nil || *sc.RunAsUser == 0 {
		t.Errorf("securityContext %+v: want a non-root user in the socket's group 65532", sc)
	}
	m := p.Spec.Containers[0].VolumeMounts
	if len(m) != 1 || m[0].MountPath != "/run/clockwatch" || !m[0].ReadOnly || p.Spec.Volumes[0].HostPath == nil ||
		p.Spec.Volumes[0].HostPath.Path != "/run/clockwatch" {
		t.Errorf("mounts %+v, volumes %+v: want the node's /run/clockwatch read-only", m, p.Spec.Volumes)
	}
}

func checkDaemonSet(t *testing.T, ds *appsv1.DaemonSet, k8s bool) {
	t.Helper()
	p := ds.Spec.Template.Spec
	if !p.HostNetwork || p.PriorityClassName != "system-node-critical" {
		t.Errorf("hostNetwork %v, priorityClassName %q", p.HostNetwork, p.PriorityClassName)
	}
	if len(p.Tolerations) != 1 || p.Tolerations[0].Operator != corev1.TolerationOpExists || p.Tolerations[0].Key != "" {
		t.Errorf("tolerations %+v: want every taint tolerated", p.Tolerations)
	}
	psc := p.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser == nil || *psc.RunAsUser != 65532 ||
		psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("pod securityContext %+v", psc)
	}
	if len(p.Containers) != 1 {
		t.Fatalf("%d containers", len(p.Containers))
	}
	c := p.Containers[0]
	sc := c.SecurityContext
	if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || sc.AllowPrivilegeEscalation == nil ||
		*sc.AllowPrivilegeEscalation || sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) ||
		!slices.Equal(sc.Capabilities.Add, []corev1.Capability{"SYS_NICE"}) { // --runtime.nice's setpriority, nothing else
		t.Errorf("container securityContext %+v", sc)
	}
	if c.LivenessProbe == nil || c.LivenessProbe.HTTPGet.Path != "/healthz" || c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet.Path != "/readyz" {
		t.Errorf("probes: liveness %+v, readiness %+v", c.LivenessProbe, c.ReadinessProbe)
	}
	if c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Memory().IsZero() {
		t.Errorf("resources %+v", c.Resources)
	}
	hasArg := slices.ContainsFunc(c.Args, func(a string) bool { return strings.HasPrefix(a, "--kubernetes.node-name=$(NODE_NAME)") })
	if hasArg != k8s {
		t.Errorf("--kubernetes.node-name in args %v: %v, want %v", c.Args, hasArg, k8s)
	}
	mounts := map[string]string{}
	for _, m := range c.VolumeMounts {
		mounts[m.MountPath] = m.Name
	}
	hostPaths := map[string]string{}
	for _, v := range p.Volumes {
		if v.HostPath != nil {
			hostPaths[v.Name] = v.HostPath.Path
		}
	}
	// The stepdown socket and segment, the reply socket chronyd answers to,
	// and the epoch: host paths at the same path in the pod.
	for _, path := range []string{"/run/clockwatch", "/var/lib/clockwatch", "/run/chrony"} {
		if hostPaths[mounts[path]] != path {
			t.Errorf("%s is mounted from %q, want the host's %s", path, hostPaths[mounts[path]], path)
		}
	}
	if len(p.InitContainers) != 1 || p.InitContainers[0].Args[0] != "host-dirs" {
		t.Errorf("init containers %+v", p.InitContainers)
	}
}

// image is the image's name without its tag: what make image names it and
// the manifests and the chart run.
const image = "ghcr.io/clockwatch/clockwatch"

// versionFile is the VERSION file's X.Y.Z.
func versionFile(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(Root + "/VERSION")
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// containerImages are the images of every container and init container of
// every workload in a render.
func containerImages(t *testing.T, render []byte) []string {
	t.Helper()
	docs, err := Documents(render)
	if err != nil {
		t.Fatal(err)
	}
	var images []string
	for _, d := range docs {
		o, err := Decode(d)
		if err != nil {
			t.Fatal(err)
		}
		var spec *corev1.PodSpec
		switch v := o.Value.(type) {
		case *appsv1.DaemonSet:
			spec = &v.Spec.Template.Spec
		case *corev1.Pod:
			spec = &v.Spec
		default:
			continue
		}
		for _, c := range append(spec.InitContainers, spec.Containers...) {
			images = append(images, c.Image)
		}
	}
	if len(images) == 0 {
		t.Fatal("no container in the render")
	}
	return images
}

// TestImageNamesAgree: the kustomize base, the chart's defaults, the example
// pod and the chart's appVersion name the image make image names
// (TestImageScriptName): ghcr.io/clockwatch/clockwatch:<VERSION>. Before,
// the manifests said an unqualified "clockwatch" and make image tagged
// 0.1.0-git167.g0bc0226 while the chart defaulted to 0.1.0.
func TestImageNamesAgree(t *testing.T) {
	want := image + ":" + versionFile(t)
	chart, err := os.ReadFile(Root + "/deploy/helm/clockwatch/Chart.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		AppVersion string `json:"appVersion"`
	}
	if err := yaml.Unmarshal(chart, &c); err != nil {
		t.Fatal(err)
	}
	if c.AppVersion != versionFile(t) {
		t.Errorf("Chart.yaml's appVersion %q, VERSION %q: the chart's default tag must be make image's", c.AppVersion, versionFile(t))
	}
	for name, b := range renders(t) {
		for _, img := range containerImages(t, b) {
			w := want
			if strings.Contains(name, "everything on") {
				w = image + ":1.2.3" // image.tag=1.2.3
			}
			if img != w {
				t.Errorf("%s runs %s, want %s", name, img, w)
			}
		}
	}
	pod, err := os.ReadFile(Root + "/examples/kubernetes/app-pod.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, img := range containerImages(t, pod) {
		if img != want {
			t.Errorf("examples/kubernetes/app-pod.yaml runs %s, want %s", img, want)
		}
	}
}

// TestImageScriptName runs make image's script for one architecture and
// reads the name the archive gives its image (what podman load and ctr
// import name it): the one the manifests run.
func TestImageScriptName(t *testing.T) {
	dist := t.TempDir()
	cmd := exec.Command("./scripts/image.sh")
	cmd.Dir = Root
	cmd.Env = append(os.Environ(), "ARCHS=amd64", "DIST="+dist, "GOWORK=")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("scripts/image.sh: %v\n%s", err, out)
	}
	want := image + ":" + versionFile(t)
	if got := refName(t, filepath.Join(dist, "clockwatch-image-amd64.tar")); got != want {
		t.Errorf("make image names the image %s, want %s", got, want)
	}
	if !strings.Contains(string(out), want) {
		t.Errorf("scripts/image.sh does not say the name it gave:\n%s", out)
	}
}

// refName is the reference an OCI archive names its image by.
func refName(t *testing.T, archive string) string {
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

// TestDocumentedOverlay runs the lines docs/kubernetes.md gives for a
// registry's copy of the image, as written there, from the checkout's top
// directory with HOME a temporary directory and a kubectl that only says
// what it was asked, then renders the overlay they wrote: every container
// runs the copy.
func TestDocumentedOverlay(t *testing.T) {
	doc, err := os.ReadFile(Root + "/docs/kubernetes.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(doc), "\n    mkdir -p ~/clockwatch-overlay\n")
	block, _, ok2 := strings.Cut(rest, "\n\n")
	if !ok || !ok2 {
		t.Fatal("docs/kubernetes.md has no overlay block (mkdir -p ~/clockwatch-overlay ...)")
	}
	var lines []string
	for _, l := range strings.Split("    mkdir -p ~/clockwatch-overlay\n"+block, "\n") {
		lines = append(lines, strings.TrimPrefix(l, "    "))
	}
	home, bin := t.TempDir(), t.TempDir()
	// Written by a child process, not os.WriteFile: a parallel test's fork
	// inheriting the open file would make it "Text file busy".
	fake := exec.Command("/bin/sh", "-c", `printf '#!/bin/sh\necho "$@" >"$HOME/kubectl.args"\n' >"$1" && chmod 0755 "$1"`, "sh", filepath.Join(bin, "kubectl"))
	if out, err := fake.CombinedOutput(); err != nil {
		t.Fatalf("writing the fake kubectl: %v\n%s", err, out)
	}
	cmd := exec.Command("bash", "-euc", strings.Join(lines, "\n"))
	cmd.Dir = Root
	cmd.Env = append(os.Environ(), "HOME="+home, "PATH="+bin+":"+os.Getenv("PATH"))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the documented lines: %v\n%s", err, out)
	}
	args, err := os.ReadFile(filepath.Join(home, "kubectl.args"))
	if want := "apply -k " + filepath.Join(home, "clockwatch-overlay") + "\n"; err != nil || string(args) != want {
		t.Errorf("kubectl was asked %q (%v), want %q", args, err, want)
	}
	b, err := Kustomize("", filepath.Join(home, "clockwatch-overlay"))
	if err != nil {
		t.Fatal(err)
	}
	for _, img := range containerImages(t, b) {
		if img != "registry.example/clockwatch:0.1.0" {
			t.Errorf("the documented overlay runs %s, want registry.example/clockwatch:0.1.0", img)
		}
	}
}

// TestScrapeConfigWithoutOperator: deploy/kubernetes/prometheus/
// scrape-config.yml is a configuration Prometheus takes (promtool check
// config, of a Prometheus with Kubernetes discovery: Debian's has none), and
// it selects the rendered DaemonSet's pods by their label and its port by
// name, in the kustomize base's namespace, with the job the mixin selects.
func TestScrapeConfigWithoutOperator(t *testing.T) {
	const file = Root + "/deploy/kubernetes/prometheus/scrape-config.yml"
	promtool, err := PromtoolK8s()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true and a test prerequisite is missing: %v", err)
		}
		t.Skip(err)
	}
	if out, err := exec.Command(promtool, "check", "config", file).CombinedOutput(); err != nil {
		t.Errorf("promtool check config: %v\n%s", err, out)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		ScrapeConfigs []struct {
			JobName string `json:"job_name"`
			SD      []struct {
				Role       string `json:"role"`
				Namespaces struct {
					Names []string `json:"names"`
				} `json:"namespaces"`
				Selectors []struct {
					Role  string `json:"role"`
					Label string `json:"label"`
				} `json:"selectors"`
			} `json:"kubernetes_sd_configs"`
			Relabel []struct {
				SourceLabels []string `json:"source_labels"`
				Regex        string   `json:"regex"`
				Action       string   `json:"action"`
			} `json:"relabel_configs"`
		} `json:"scrape_configs"`
	}
	if err := yaml.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	if len(cfg.ScrapeConfigs) != 1 || len(cfg.ScrapeConfigs[0].SD) != 1 || len(cfg.ScrapeConfigs[0].SD[0].Selectors) != 1 {
		t.Fatalf("want one job with one kubernetes_sd_config and one selector: %+v", cfg)
	}
	job := cfg.ScrapeConfigs[0]
	sd := job.SD[0]
	if job.JobName != "clockwatch" || sd.Role != "pod" || !slices.Equal(sd.Namespaces.Names, []string{"clockwatch"}) {
		t.Errorf("job %q, role %q, namespaces %v: want clockwatch (the mixin's job), pod, [clockwatch]", job.JobName, sd.Role, sd.Namespaces.Names)
	}
	key, value, _ := strings.Cut(sd.Selectors[0].Label, "=")
	var port string
	for _, r := range job.Relabel {
		if r.Action == "keep" && slices.Equal(r.SourceLabels, []string{"__meta_kubernetes_pod_container_port_name"}) {
			port = r.Regex
		}
	}
	b, err = Kustomize(Root, "deploy/kubernetes")
	if err != nil {
		t.Fatal(err)
	}
	docs, err := Documents(b)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, d := range docs {
		o, err := Decode(d)
		if err != nil {
			t.Fatal(err)
		}
		ds, ok := o.Value.(*appsv1.DaemonSet)
		if !ok {
			continue
		}
		found = true
		if ds.Namespace != "clockwatch" || ds.Spec.Template.Labels[key] != value {
			t.Errorf("the DaemonSet (namespace %s, pod labels %v) is not what the scrape config selects (%s in clockwatch)", ds.Namespace, ds.Spec.Template.Labels, sd.Selectors[0].Label)
		}
		var ports []string
		for _, c := range ds.Spec.Template.Spec.Containers {
			for _, p := range c.Ports {
				ports = append(ports, p.Name)
			}
		}
		if port == "" || !slices.Contains(ports, port) {
			t.Errorf("the scrape config keeps port %q; the DaemonSet's ports are %v", port, ports)
		}
	}
	if !found {
		t.Fatal("no DaemonSet in deploy/kubernetes")
	}
}
