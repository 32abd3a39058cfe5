package kubernetes

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/clockwatch/clockwatch/internal/announce"
	kubeclient "github.com/clockwatch/clockwatch/internal/kubernetes"
	"github.com/clockwatch/clockwatch/internal/policy"
	"github.com/clockwatch/clockwatch/stepdown"
)

var update = flag.Bool("update", false, "rewrite testdata/ from what the code gives")

func f(v float64) *float64 { return &v }

// The condition and the Event for each kind of announcement, as the Node
// and `kubectl get events` show them (the apiserver test, test/kubeapiserver,
// shows them for real).
func TestConditionAndEvents(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 2, 6, 0, 0, 500, time.UTC)
	cases := []struct {
		name string
		snap announce.Snapshot
		an   *announce.Announcement
	}{
		{name: "starting", snap: announce.Snapshot{Status: policy.Status{State: stepdown.StateUnknown, Reason: stepdown.ReasonStarting}, Starting: true}},
		{name: "trusted at start", snap: snap(stepdown.StateOK, stepdown.ReasonStarting, false, policy.Event{Type: stepdown.TypeResume,
			Reason: stepdown.ReasonStarting, Detail: "every source has reported"})},
		{name: "step", snap: snap(stepdown.StateStepdown, stepdown.ReasonStep, false, policy.Event{Type: stepdown.TypeStepdown,
			Reason: stepdown.ReasonStep, Epoch: 3, Source: "clocks", StepSeconds: f(-12.4), Detail: "the clock stepped back 12.4s"})},
		{name: "offset", snap: snap(stepdown.StateStepdown, stepdown.ReasonOffset, false, policy.Event{Type: stepdown.TypeStepdown,
			Reason: stepdown.ReasonOffset, Source: "chrony", OffsetSeconds: f(-1.999997973), Detail: "system clock offset -1.999997973s from chrony is over 1s"})},
		{name: "error bound", snap: snap(stepdown.StateStepdown, stepdown.ReasonErrorBound, false, policy.Event{Type: stepdown.TypeStepdown,
			Reason: stepdown.ReasonErrorBound, Source: "chrony", Detail: "clock error bound 1.2s from chrony is over 1s"})},
		{name: "peer offset", snap: snap(stepdown.StateStepdown, stepdown.ReasonPeerOffset, false, policy.Event{Type: stepdown.TypeStepdown,
			Reason: stepdown.ReasonPeerOffset, Source: "peers", Detail: "this clock disagrees with the majority of its peers (2 of 2 peers more than 100ms off) for 10s"})},
		{name: "drill", snap: snap(stepdown.StateStepdown, stepdown.ReasonDrill, true, policy.Event{Type: stepdown.TypeStepdown,
			Reason: stepdown.ReasonDrill, Drill: true, Detail: "drill: nothing is wrong with the clock"})},
		{name: "drill of a step", snap: snap(stepdown.StateStepdown, stepdown.ReasonStep, true, policy.Event{Type: stepdown.TypeStepdown,
			Reason: stepdown.ReasonStep, Drill: true, StepSeconds: f(1), Detail: "drill"})},
		{name: "resume", snap: snap(stepdown.StateOK, stepdown.ReasonStep, false, policy.Event{Type: stepdown.TypeResume,
			Reason: stepdown.ReasonStep, Epoch: 3, Detail: "no trigger has held for 30s"})},
	}
	var b strings.Builder
	for _, tc := range cases {
		c := ConditionOf(tc.snap, now)
		if !c.LastTransitionTime.Equal(now.Truncate(time.Second)) || !c.LastHeartbeatTime.Equal(c.LastTransitionTime) {
			t.Errorf("%s: times %s %s, want %s", tc.name, c.LastTransitionTime, c.LastHeartbeatTime, now.Truncate(time.Second))
		}
		fmt.Fprintf(&b, "%s\n  condition %s=%s reason=%s message=%q\n", tc.name, c.Type, c.Status, c.Reason, c.Message)
		if tc.snap.Last.Event.Type != "" {
			reason, typ, msg := EventOf(tc.snap.Last)
			fmt.Fprintf(&b, "  event %s %s %q\n", typ, reason, msg)
		}
	}
	checkGolden(t, "testdata/conditions.golden", b.String())
}

func snap(st stepdown.State, r stepdown.Reason, drill bool, e policy.Event) announce.Snapshot {
	return announce.Snapshot{Status: policy.Status{State: st, Reason: r, Epoch: e.Epoch, Drill: drill},
		Last: announce.Announcement{Event: e, Message: e.Message(1)}}
}

func TestCamelCase(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{"error_bound": "ErrorBound", "step": "Step", "grandmaster_changed": "GrandmasterChanged", "": ""} {
		if got := CamelCase(in); got != want {
			t.Errorf("CamelCase(%q) = %q, want %q", in, got, want)
		}
	}
}

func checkGolden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s (-want +got):\n%s", path, diff)
	}
}

// TestHTTPClientRedirectCounted: a redirect, which the client never follows
// (internal/kubernetes TestHTTPClientNeverFollowsARedirect), is counted as
// result="redirect", never as ok (issue 32, item 4: a 301/302 turned the
// condition's PATCH into a GET that was counted a success).
func TestHTTPClientRedirectCounted(t *testing.T) {
	t.Parallel()
	for _, code := range []int{http.StatusMovedPermanently, http.StatusFound, http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		t.Run(fmt.Sprint(code), func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, "http://127.0.0.1:1/api/v1/nodes/n/status", code)
			}))
			defer srv.Close()
			kc := filepath.Join(t.TempDir(), "kubeconfig")
			if err := os.WriteFile(kc, []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
current-context: x
contexts:
- name: x
  context: {cluster: c, user: u}
clusters:
- name: c
  cluster: {server: %q}
users:
- name: u
  user: {token: t}
`, srv.URL)), 0o600); err != nil {
				t.Fatal(err)
			}
			c, err := kubeclient.KubeconfigClient(kc)
			if err != nil {
				t.Fatal(err)
			}
			p := NewWithClient(c, "n", nil, nil)
			err = c.PatchNodeCondition(context.Background(), "n", kubeclient.Condition{Type: ConditionType, Status: "False"})
			p.count("patch_condition", err)
			var re *kubeclient.RedirectError
			if !errors.As(err, &re) || re.Code != code {
				t.Fatalf("PatchNodeCondition: %v, want a redirect error %d", err, code)
			}
			if got := testutil.ToFloat64(p.requests.WithLabelValues("patch_condition", "redirect")); got != 1 {
				t.Errorf("requests{result=redirect} = %v, want 1", got)
			}
			if got := testutil.ToFloat64(p.requests.WithLabelValues("patch_condition", "ok")); got != 0 {
				t.Errorf("requests{result=ok} = %v, want 0", got)
			}
		})
	}
}
