package generate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/google/go-jsonnet"
	"go.yaml.in/yaml/v3"
)

// Entry is the jsonnet file, relative to the mixin directory, whose value
// maps each generated file's repository path to its content.
const Entry = "outputs.jsonnet"

// headers are the comments the generated files start with; JSON has none.
var headers = map[string]string{
	"alerts/clockwatch.rules.yml": `# Prometheus recording and alerting rules for clockwatch.
#
# GENERATED from the clockwatch mixin (mixin/): do not edit. Change
# mixin/*.libsonnet and run ` + "`make mixin`" + ` (mixin/README.md).
#
# Load with ` + "`rule_files: [/path/to/clockwatch.rules.yml]`" + `. The rules select
# clockwatch's series with {{SELECTOR}}; for another selector, cluster
# label or thresholds, generate your own from the mixin. Severities:
# critical pages (clock steps and offsets: the clock is wrong now), warning
# opens a ticket, info is for the record. Every alert links to its section
# of docs/runbook.md, which says what to do.
#
# Tested by ` + "`promtool test rules alerts/clockwatch.rules_test.yml`" + ` and by the
# end-to-end tests in alerts/ (go test ./alerts).
`,
	ChartRules: `# The chart's copy of the mixin's rules, with placeholders (@name@,
# @name:duration@) the chart's helper clockwatch.mixin fills from
# .Values.mixin (values.yaml; templates/_helpers.tpl).
#
# GENERATED from the clockwatch mixin (mixin/) by ` + "`make mixin`" + `: do not edit.
`,
	"alerts/clockwatch.migration.rules.yml": `# Optional recording rules for a move from chrony_exporter or node_exporter's
# timex collector to clockwatch: they record clockwatch's figures under those
# exporters' names, labels, units and signs, so existing queries and
# dashboards keep working (docs/metrics.md, "Coming from node_exporter /
# chrony_exporter"). Load next to clockwatch.rules.yml; drop once migrated.
#
# GENERATED from the clockwatch mixin (mixin/rules/migration.libsonnet): do
# not edit; run ` + "`make mixin`" + `.
`,
}

// k8sHeader starts the Kubernetes objects and the chart's copies.
const k8sHeader = `# GENERATED from the clockwatch mixin (mixin/) by ` + "`make mixin`" + `: do not edit.
`

// Generate evaluates the mixin in dir with config merged into its _config
// (nil for the defaults) and returns each output file's content by its path
// relative to the repository root.
func Generate(dir string, config map[string]any) (map[string][]byte, error) {
	vm := jsonnet.MakeVM()
	vm.Importer(&jsonnet.FileImporter{JPaths: []string{dir}})
	if err := setConfig(vm, config); err != nil {
		return nil, err
	}
	entry := filepath.Join(dir, Entry)
	out, err := vm.EvaluateFile(entry)
	if err != nil {
		return nil, fmt.Errorf("evaluating %s: %w", entry, err)
	}
	var files map[string]json.RawMessage
	if err := json.Unmarshal([]byte(out), &files); err != nil {
		return nil, fmt.Errorf("%s: want an object of file name to content: %w", entry, err)
	}
	// The header says the selector the rules were rendered with, as the
	// mixin resolved it (the default, or the config's).
	cfg, err := resolve(vm, config)
	if err != nil {
		return nil, err
	}
	selector, ok := cfg["clockwatchSelector"].Value.(string)
	if !ok {
		return nil, fmt.Errorf("the mixin's clockwatchSelector: want a string, got %v", cfg["clockwatchSelector"].Value)
	}
	chart, block, err := chartFiles(vm, entry, config, cfg, files)
	if err != nil {
		return nil, err
	}
	for name, content := range chart {
		files[name] = content
	}
	res := make(map[string][]byte, len(files)+1)
	for name, content := range files {
		var b []byte
		switch filepath.Ext(name) {
		case ".json":
			b, err = indentJSON(content)
		case ".yml", ".yaml":
			b, err = toYAML(content)
		default:
			err = fmt.Errorf("unknown file type (want .json, .yml or .yaml)")
		}
		if err != nil {
			return nil, fmt.Errorf("%s: output %s: %w", entry, name, err)
		}
		h, ok := headers[name]
		if !ok && strings.HasPrefix(name, "deploy/") && filepath.Ext(name) != ".json" {
			h = k8sHeader
		}
		h = strings.ReplaceAll(h, "{{SELECTOR}}", selector)
		res[name] = append([]byte(h), b...)
	}
	if res[ChartValues], err = spliceValues(dir, block); err != nil {
		return nil, err
	}
	return res, nil
}

// Names returns the generated files' paths, sorted.
func Names(files map[string][]byte) []string {
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func indentJSON(raw json.RawMessage) ([]byte, error) {
	var buf bytes.Buffer
	if err := json.Indent(&buf, raw, "", "  "); err != nil {
		return nil, err
	}
	buf.WriteByte('\n')
	return buf.Bytes(), nil
}

// keyOrder puts a rule's keys in the order people read them (jsonnet sorts
// object keys); other keys follow in jsonnet's order.
var keyOrder = []string{"name", "record", "alert", "expr", "for", "labels", "annotations", "summary", "description", "runbook_url"}

// toYAML renders JSON as block-style YAML: multi-line strings (PromQL) as
// literal blocks, keys in keyOrder.
func toYAML(raw json.RawMessage) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		return nil, err
	}
	restyle(&doc)
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func restyle(n *yaml.Node) {
	n.Style = 0
	if n.Kind == yaml.ScalarNode && n.Tag == "!!str" && strings.Contains(n.Value, "\n") {
		n.Style = yaml.LiteralStyle
	}
	if n.Kind == yaml.MappingNode {
		type pair struct{ k, v *yaml.Node }
		pairs := make([]pair, 0, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			pairs = append(pairs, pair{n.Content[i], n.Content[i+1]})
		}
		rank := func(k string) int {
			if i := slices.Index(keyOrder, k); i >= 0 {
				return i
			}
			return len(keyOrder)
		}
		slices.SortStableFunc(pairs, func(a, b pair) int { return rank(a.k.Value) - rank(b.k.Value) })
		n.Content = n.Content[:0]
		for _, p := range pairs {
			n.Content = append(n.Content, p.k, p.v)
		}
	}
	for _, c := range n.Content {
		restyle(c)
	}
}
