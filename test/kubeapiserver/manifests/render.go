package manifests

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// Root is the repository root, from this package's directory.
const Root = "../../.."

// Kustomize builds a kustomization directory (relative to Root) as
// `kubectl apply -k` does.
func Kustomize(root, dir string) ([]byte, error) {
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	m, err := k.Run(filesys.MakeFsOnDisk(), filepath.Join(root, dir))
	if err != nil {
		return nil, fmt.Errorf("kustomize build %s: %w", dir, err)
	}
	return m.AsYaml()
}

// PromtoolK8s finds a promtool that knows Kubernetes service discovery
// (Debian's Prometheus is built without it): $PROMTOOL_K8S, then
// $(go env GOPATH)/bin/prometheus-k8s/promtool, where
// scripts/deps.d/85-kubernetes.sh installs it (a directory of its own, so
// that it never shadows Debian's promtool in PATH).
func PromtoolK8s() (string, error) {
	if p := os.Getenv("PROMTOOL_K8S"); p != "" {
		return p, nil
	}
	out, err := exec.Command("go", "env", "GOPATH").Output()
	if err == nil {
		p := filepath.Join(strings.TrimSpace(string(out)), "bin", "prometheus-k8s", "promtool")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("no promtool with Kubernetes discovery; run scripts/test-deps.sh (scripts/deps.d/85-kubernetes.sh installs it)")
}

// Helm finds helm: $HELM, PATH, then $(go env GOPATH)/bin, where
// scripts/deps.d/85-kubernetes.sh installs it.
func Helm() (string, error) {
	if h := os.Getenv("HELM"); h != "" {
		return h, nil
	}
	if p, err := exec.LookPath("helm"); err == nil {
		return p, nil
	}
	out, err := exec.Command("go", "env", "GOPATH").Output()
	if err == nil {
		p := filepath.Join(strings.TrimSpace(string(out)), "bin", "helm")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("helm not found; run scripts/test-deps.sh (scripts/deps.d/85-kubernetes.sh installs it)")
}

// HelmTemplate renders the chart with the given --set values.
func HelmTemplate(helm, root, release, namespace string, set ...string) ([]byte, error) {
	var args []string
	for _, s := range set {
		args = append(args, "--set", s)
	}
	return HelmTemplateArgs(helm, root, release, namespace, args...)
}

// HelmTemplateArgs renders the chart with more arguments of helm template
// (--set, --values FILE, ...).
func HelmTemplateArgs(helm, root, release, namespace string, more ...string) ([]byte, error) {
	args := append([]string{"template", release, filepath.Join(root, "deploy/helm/clockwatch"), "--namespace", namespace}, more...)
	var stderr bytes.Buffer
	cmd := exec.Command(helm, args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("helm %s: %w: %s", strings.Join(args, " "), err, stderr.String())
	}
	return out, nil
}

// Documents splits a multi-document YAML stream into JSON objects, empty
// documents left out.
func Documents(b []byte) ([][]byte, error) {
	var docs [][]byte
	for i, d := range bytes.Split(append([]byte("\n"), b...), []byte("\n---")) {
		j, err := yaml.YAMLToJSON(d)
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		if string(j) == "null" {
			continue
		}
		docs = append(docs, j)
	}
	return docs, nil
}
