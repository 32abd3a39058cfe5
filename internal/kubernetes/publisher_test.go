package kubernetes

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/clockwatch/clockwatch/internal/announce"
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

// A kubeconfig that cannot be used says what is wrong and where.
func TestKubeconfigErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for name, tc := range map[string]struct{ file, want string }{
		"no context":      {"apiVersion: v1\nkind: Config\n", "no current-context"},
		"unknown context": {"current-context: x\ncontexts: []\n", `current-context "x" is not among its contexts`},
		"no server":       {"current-context: x\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\n", `no server for cluster "c"`},
		"bad CA": {"current-context: x\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\nclusters:\n- name: c\n  cluster: {server: 'https://127.0.0.1:1', certificate-authority-data: bm90IGEgY2VydA==}\nusers:\n- name: u\n  user: {token: t}\n",
			"the CA holds no PEM certificate"},
		"not yaml": {"{", "--kubernetes.kubeconfig"},
	} {
		p := dir + "/" + strings.ReplaceAll(name, " ", "-")
		if err := os.WriteFile(p, []byte(tc.file), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := KubeconfigClient(p)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", name, err, tc.want)
		}
	}
	if _, err := InClusterConfig(func(string) string { return "" }, dir); err == nil || !strings.Contains(err.Error(), "not in a pod") {
		t.Errorf("InClusterConfig outside a pod: %v", err)
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
