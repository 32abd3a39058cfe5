package daemon

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestWebActivationFDs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		env  map[string]string
		want []int
	}{
		{"not activated", map[string]string{}, nil},
		{"for another process", map[string]string{"LISTEN_PID": "1", "LISTEN_FDS": "1"}, nil},
		{"one unnamed socket is HTTP's", map[string]string{"LISTEN_PID": "42", "LISTEN_FDS": "1"}, []int{3}},
		{"the stepdown socket is left out", map[string]string{"LISTEN_PID": "42", "LISTEN_FDS": "2", "LISTEN_FDNAMES": "stepdown:http"}, []int{4}},
		{"only the stepdown socket: none for HTTP", map[string]string{"LISTEN_PID": "42", "LISTEN_FDS": "1", "LISTEN_FDNAMES": "stepdown"}, nil},
		{"two for HTTP around it", map[string]string{"LISTEN_PID": "42", "LISTEN_FDS": "3", "LISTEN_FDNAMES": "web:stepdown:web6"}, []int{3, 5}},
		{"garbage count", map[string]string{"LISTEN_PID": "42", "LISTEN_FDS": "x"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := webActivationFDs(func(k string) string { return tt.env[k] }, 42)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("webActivationFDs() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
