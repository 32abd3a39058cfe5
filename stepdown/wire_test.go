package stepdown_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/clockwatch/clockwatch/stepdown"
)

func TestParseMessage(t *testing.T) {
	t.Parallel()
	wall := time.Date(2026, 11, 30, 5, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name    string
		line    string
		want    stepdown.Message
		garbage bool
	}{
		{name: "ack", line: `{"type":"ack","seq":3}` + "\n", want: stepdown.Message{Type: "ack", Seq: 3}},
		{name: "crlf and unknown fields", line: `{"type":"heartbeat","seq":1,"state":"ok","future":[1,2]}` + "\r\n",
			want: stepdown.Message{Type: "heartbeat", Seq: 1, State: "ok"}},
		{name: "stepdown", line: `{"type":"stepdown","state":"stepdown","epoch":2,"seq":5,"reason":"step","step_seconds":-12.4,"wall_after":"2026-11-30T05:00:00Z","mono_ns":9}`,
			want: stepdown.Message{Type: "stepdown", State: "stepdown", Epoch: 2, Seq: 5, Reason: "step", StepSeconds: stepdown.Float(-12.4), WallAfter: wall, MonoNanos: 9}},
		{name: "not json", line: "hello\n", garbage: true},
		{name: "no type", line: `{"seq":1}`, garbage: true},
		{name: "type not a string", line: `{"type":1}`, garbage: true},
		{name: "array", line: `[1]`, garbage: true},
		{name: "too long", line: `{"type":"ack","x":"` + strings.Repeat("a", stepdown.MaxLineBytes) + `"}`, garbage: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := stepdown.ParseMessage([]byte(tc.line))
			if tc.garbage {
				if !errors.Is(err, stepdown.ErrGarbage) {
					t.Fatalf("got %v, %v; want ErrGarbage", got, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			// reflect, not go-cmp: this module requires nothing.
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("ParseMessage() =\n%+v\nwant\n%+v", got, tc.want)
			}
		})
	}
}

func FuzzParseMessage(f *testing.F) {
	for _, s := range []string{
		`{"type":"ack","seq":3}`, `{"type":"drill","reason":"step","step_seconds":-12.4,"hold_seconds":2}`,
		`{"type":"stepdown","wall_before":"2026-11-30T05:00:00Z","offset_seconds":1e308}`, `hello`, `{}`, `{"type":""}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		m, err := stepdown.ParseMessage(line)
		if err != nil {
			return
		}
		// Whatever parses must encode to one line that parses back the same.
		out := m.AppendLine(nil)
		if n := strings.Count(string(out), "\n"); n != 1 {
			t.Fatalf("%d newlines in %q", n, out)
		}
		back, err := stepdown.ParseMessage(out)
		if err != nil && len(out) <= stepdown.MaxLineBytes {
			t.Fatalf("re-parsing %q: %v", out, err)
		}
		if err == nil && back.Type != m.Type {
			t.Fatalf("type %q became %q", m.Type, back.Type)
		}
		_ = m.String()
	})
}
