package manifests

import (
	"fmt"
	"os"
	"os/exec"
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
			if diff := cmp.Diff([]string{"/nodes get", "/nodes/status patch", "/events create", "/events patch"}, rules); diff != "" {
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
		len(sc.Capabilities.Add) != 0 {
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
