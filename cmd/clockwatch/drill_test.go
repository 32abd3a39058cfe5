//go:build linux

package main

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestJoinNegativeValues(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want []string }{
		{in: []string{"drill", "--reason", "step", "--step", "-12.4s"}, want: []string{"drill", "--reason", "step", "--step=-12.4s"}},
		{in: []string{"drill", "--step", "3s"}, want: []string{"drill", "--step", "3s"}},
		{in: []string{"drill", "--step", "-.5s"}, want: []string{"drill", "--step=-.5s"}},
		{in: []string{"drill", "--step", "--json"}, want: []string{"drill", "--step", "--json"}},
		{in: []string{"drill", "--", "--step", "-1s"}, want: []string{"drill", "--", "--step", "-1s"}},
	} {
		if diff := cmp.Diff(tc.want, joinNegativeValues(tc.in)); diff != "" {
			t.Errorf("%v (-want +got):\n%s", tc.in, diff)
		}
	}
}
