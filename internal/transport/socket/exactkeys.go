package socket

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"github.com/clockwatch/clockwatch/stepdown"
)

// The protocol's keys are exact, but Go's encoding/json matches them
// case-insensitively (with Unicode folding: "ſ" for "s", the Kelvin sign for
// "k"): {"TYPE":"drill"} ran a drill. The server refuses a line with a key
// that only folds to one of the protocol's; keys that match none are still
// ignored (newer clients may send more).

// protocolKeys are stepdown.Message's JSON keys.
func protocolKeys() map[string]bool {
	keys := map[string]bool{}
	t := reflect.TypeFor[stepdown.Message]()
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" {
			keys[name] = true
		}
	}
	return keys
}

// checkKeys reports a top-level key of line that is not one of keys but
// folds to one. A line that is not a JSON object is left to
// stepdown.ParseMessage to refuse.
func checkKeys(line []byte, keys map[string]bool) error {
	dec := json.NewDecoder(bytes.NewReader(line))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil
		}
		key, _ := t.(string)
		if !keys[key] {
			for k := range keys {
				if strings.EqualFold(k, key) {
					return fmt.Errorf("%w: key %q is not the protocol's %q (keys are case-sensitive)", stepdown.ErrGarbage, key, k)
				}
			}
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil
		}
	}
	return nil
}
