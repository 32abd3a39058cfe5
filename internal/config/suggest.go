package config

import (
	"fmt"
	"reflect"
	"strings"
)

// unknownKey words an unknown key for someone editing YAML: where it is (the
// section as written in the file, not a Go type), the key it most likely
// meant, and the keys that section has. path is the dotted path of the key
// ("clock.sampel_interval"), "" when the line was not found.
func unknownKey(key, path string) string {
	segs := strings.Split(path, ".")
	at := -1
	for i, seg := range segs {
		if seg == key {
			at = i // the last one: a key may repeat a section's name
		}
	}
	if at < 0 {
		return fmt.Sprintf("unknown key %q (keys are case-sensitive)", key)
	}
	section := strings.Join(segs[:at], ".")
	where := "at the top level"
	if section != "" {
		where = "under " + section + ":"
	}
	msg := fmt.Sprintf("unknown key %q %s (keys are case-sensitive)", key, where)
	known, ok := keysAt(section)
	if !ok {
		return msg
	}
	if best := closest(key, known); best != "" {
		msg += fmt.Sprintf("; did you mean %q?", best)
	}
	return msg + " Keys there: " + strings.Join(known, ", ")
}

// keysAt lists the keys the section at the dotted path accepts, in the order
// of the configuration's types; ok is false when the path leads nowhere known.
func keysAt(section string) (keys []string, ok bool) {
	t := reflect.TypeFor[Config]()
	if section != "" {
		for _, seg := range strings.Split(section, ".") {
			if i := strings.IndexByte(seg, '['); i >= 0 {
				seg = seg[:i]
			}
			for t.Kind() == reflect.Pointer {
				t = t.Elem()
			}
			switch t.Kind() {
			case reflect.Map:
				t = t.Elem() // seg is a key of the map (a source's name)
				continue
			case reflect.Struct:
			default:
				return nil, false
			}
			f, found := field(t, seg)
			if !found {
				return nil, false
			}
			t = f.Type
			for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
				t = t.Elem()
			}
		}
	}
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Map {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil, false
	}
	return yamlKeys(t), true
}

// field finds the field of struct t that YAML key name decodes into,
// looking into inlined structs.
func field(t reflect.Type, name string) (reflect.StructField, bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if strings.Contains(opts, "inline") {
			if g, ok := field(f.Type, name); ok {
				return g, true
			}
			continue
		}
		if tag == name && tag != "-" {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

// yamlKeys are the YAML keys of struct t, inlined structs' included.
func yamlKeys(t reflect.Type) []string {
	var keys []string
	for i := range t.NumField() {
		f := t.Field(i)
		tag, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		switch {
		case strings.Contains(opts, "inline"):
			keys = append(keys, yamlKeys(f.Type)...)
		case tag != "" && tag != "-" && f.IsExported():
			keys = append(keys, tag)
		}
	}
	return keys
}

// closest is the known key nearest to key when it is near enough to be a
// typo (a case slip, or a few letters' edit), else "".
func closest(key string, known []string) string {
	best, bestD := "", len(key)/3+2
	for _, k := range known {
		if strings.EqualFold(k, key) {
			return k
		}
		if d := editDistance(key, k); d < bestD {
			best, bestD = k, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance, a transposition counting as
// one edit (sampel → sample).
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}
