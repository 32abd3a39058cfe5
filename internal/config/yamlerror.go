package config

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// yamlError turns the YAML decoder's messages ("yaml: line 3: field x not
// found in type config.Clock") into "name:3: unknown key x", one problem a
// line.
func yamlError(name string, root *yaml.Node, err error) error {
	msgs := []string{err.Error()}
	var te *yaml.TypeError
	if errors.As(err, &te) {
		msgs = te.Errors
	}
	for i, m := range msgs {
		m = strings.TrimPrefix(m, "yaml: ")
		loc, key := name, ""
		if rest, ok := strings.CutPrefix(m, "line "); ok {
			if n, text, ok := strings.Cut(rest, ": "); ok {
				loc, m = name+":"+n, text
				if line, err := strconv.Atoi(n); err == nil {
					key = keyAt(root, line)
				}
			}
		}
		msgs[i] = loc + ": " + friendlier(m, key)
	}
	return errors.New(strings.Join(msgs, "\n"))
}

// friendlier rewords the decoder's type errors for someone editing YAML; key
// is the dotted path of the value on the error's line, "" when unknown.
func friendlier(m, key string) string {
	if rest, ok := strings.CutPrefix(m, "field "); ok {
		if name, _, ok := strings.Cut(rest, " not found in type "); ok {
			return unknownKey(name, key)
		}
	}
	if strings.HasPrefix(m, "cannot unmarshal !!seq into config.Config") ||
		strings.HasPrefix(m, "cannot unmarshal !!str") && strings.HasSuffix(m, "into config.Config") {
		return "the file must be a mapping of keys such as clock: and health:"
	}
	// "cannot unmarshal !!str `many` into int": name the key, the type
	// wanted and an example, not Go's types.
	if rest, ok := strings.CutPrefix(m, "cannot unmarshal "); ok {
		if what, into, ok := strings.Cut(rest, " into "); ok {
			_, val, _ := strings.Cut(what, " ")
			if val == "" {
				val = "a " + strings.TrimPrefix(what, "!!") // !!map, !!seq
			}
			want, example := expected(into)
			if key != "" {
				return fmt.Sprintf("%s: %s is not %s (write it like %s)", key, val, want, example)
			}
			return fmt.Sprintf("%s is not %s (write it like %s)", val, want, example)
		}
	}
	return m
}

// expected names a Go type for someone editing YAML, with an example.
func expected(goType string) (what, example string) {
	switch {
	case goType == "time.Duration":
		return "a duration", "100ms, 2s or 1m30s"
	case goType == "bool":
		return "true or false", "true"
	case goType == "float64" || goType == "float32":
		return "a number", "0.0005"
	case strings.HasPrefix(goType, "uint"):
		return "a whole number, 0 or more", "1000"
	case strings.HasPrefix(goType, "int"):
		return "a whole number", "4096"
	case goType == "string":
		return "a string", `"/run/clockwatch/stepdown.sock"`
	case strings.HasPrefix(goType, "[]"):
		return "a list", "[1000, 1001]"
	default:
		return "a mapping of keys", "{enabled: true}"
	}
}

// keyAt returns the dotted path of the value that starts on line, "" when
// none does.
func keyAt(n *yaml.Node, line int) string {
	if n == nil {
		return ""
	}
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if v.Line == line && v.Kind == yaml.ScalarNode || k.Line == line && v.Kind != yaml.ScalarNode && v.Line != line {
				return k.Value
			}
			if sub := keyAt(v, line); sub != "" {
				if strings.HasPrefix(sub, "[") {
					return k.Value + sub
				}
				return k.Value + "." + sub
			}
			if v.Line == line {
				return k.Value
			}
		}
	case yaml.SequenceNode:
		for i, v := range n.Content {
			if v.Line == line && v.Kind == yaml.ScalarNode {
				return fmt.Sprintf("[%d]", i)
			}
			if sub := keyAt(v, line); sub != "" {
				return fmt.Sprintf("[%d].%s", i, sub)
			}
		}
	}
	return ""
}

// locate prefixes each "key.path: ..." validation error with the file name
// and the line of that key, one error per line.
func locate(name string, root *yaml.Node, err error) error {
	var lines []string
	for _, msg := range strings.Split(err.Error(), "\n") {
		path, _, _ := strings.Cut(msg, ":")
		if line := lineOf(root, path); line > 0 {
			lines = append(lines, fmt.Sprintf("%s:%d: %s", name, line, msg))
		} else {
			lines = append(lines, fmt.Sprintf("%s: %s", name, msg))
		}
	}
	return errors.New(strings.Join(lines, "\n"))
}

// lineOf finds the line of a dotted key path such as "chrony.servers[1]";
// 0 when the key is not in the document (a default failed validation).
func lineOf(root *yaml.Node, path string) int {
	n := root
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	line := 0
	for _, part := range strings.Split(path, ".") {
		idx := -1
		if key, rest, ok := strings.Cut(part, "["); ok {
			if i, err := strconv.Atoi(strings.TrimSuffix(rest, "]")); err == nil {
				part, idx = key, i
			}
		}
		next := mappingValue(n, part)
		if next == nil {
			return line
		}
		line, n = next.Line, next
		if idx >= 0 {
			if n.Kind != yaml.SequenceNode || idx >= len(n.Content) {
				return line
			}
			n = n.Content[idx]
			line = n.Line
		}
	}
	return line
}

func mappingValue(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}
