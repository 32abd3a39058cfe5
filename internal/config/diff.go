package config

import (
	"reflect"
	"strings"

	"github.com/clockwatch/clockwatch/internal/timesources"
)

// Changed returns the YAML paths of the settings whose values differ between
// a and b, in the order of the file's sections; a list counts as one
// setting.
func Changed(a, b *Config) []string {
	var out []string
	diffValues(reflect.ValueOf(a).Elem(), reflect.ValueOf(b).Elem(), "", &out)
	return out
}

func diffValues(a, b reflect.Value, path string, out *[]string) {
	t := a.Type()
	if t.Kind() == reflect.Struct {
		for i := range t.NumField() {
			name, opts, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
			if name == "" && opts == "inline" && t.Field(i).IsExported() {
				diffValues(a.Field(i), b.Field(i), path, out) // an embedded section's keys are the section's own
				continue
			}
			if name == "" || name == "-" || !t.Field(i).IsExported() {
				continue
			}
			p := name
			if path != "" {
				p = path + "." + name
			}
			diffValues(a.Field(i), b.Field(i), p, out)
		}
		return
	}
	if !reflect.DeepEqual(a.Interface(), b.Interface()) {
		*out = append(*out, path)
	}
}

// Reloadable reports whether a SIGHUP applies the setting at path at once:
// the health thresholds, the stepdown triggers and hold-down (a source's
// own included: timesources.Reloadable), and metrics.detail. Every other
// setting takes effect at the next start.
func Reloadable(path string) bool {
	return path == "metrics.detail" || strings.HasPrefix(path, "health.") || strings.HasPrefix(path, "stepdown.triggers.") ||
		path == "stepdown.hold_down" || timesources.Reloadable(path)
}
