package vm

import (
	"bufio"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/clockwatch/clockwatch/test/vm/guest"
)

// Record is one result line a guest program printed with guest.Emit.
type Record struct {
	// Kind is the line's "kind" field.
	Kind string
	// JSON is the whole object, kind included.
	JSON json.RawMessage
	// Line is the line's number on the console, from 1.
	Line int
}

// Records returns the result lines on the console, in order. A line that
// starts with the prefix but does not hold one JSON object (a kernel message
// cut into it, say) is an error naming its line.
func (r *Result) Records() ([]Record, error) {
	var recs []Record
	sc := bufio.NewScanner(strings.NewReader(r.Console))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		i := strings.Index(line, guest.ResultPrefix)
		if i < 0 {
			continue
		}
		body := line[i+len(guest.ResultPrefix):]
		var head struct {
			Kind string `json:"kind"`
		}
		if err := json.Unmarshal([]byte(body), &head); err != nil || head.Kind == "" {
			return recs, fmt.Errorf("console line %d: bad result line %q: %v", n, line, err)
		}
		recs = append(recs, Record{Kind: head.Kind, JSON: json.RawMessage(body), Line: n})
	}
	if err := sc.Err(); err != nil {
		return recs, fmt.Errorf("reading the console: %w", err)
	}
	return recs, nil
}

// Decode returns the result lines of one kind, decoded into T, in order.
func Decode[T any](r *Result, kind string) ([]T, error) {
	recs, err := r.Records()
	if err != nil {
		return nil, err
	}
	var out []T
	for _, rec := range recs {
		if rec.Kind != kind {
			continue
		}
		var v T
		if err := rec.Decode(&v); err != nil {
			return out, err
		}
		out = append(out, v)
	}
	return out, nil
}

// Decode decodes the record's JSON object into v.
func (r Record) Decode(v any) error {
	if err := json.Unmarshal(r.JSON, v); err != nil {
		return fmt.Errorf("console line %d: decoding %s result: %w", r.Line, r.Kind, err)
	}
	return nil
}
