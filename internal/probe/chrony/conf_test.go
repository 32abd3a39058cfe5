package chrony

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"
)

func TestAudit(t *testing.T) {
	t.Parallel()
	debian := fstest.MapFS{
		"etc/chrony/chrony.conf": {Data: []byte(`# Debian's default
pool 2.debian.pool.ntp.org iburst
confdir /etc/chrony/conf.d
sourcedir /run/chrony-dhcp
sourcedir /etc/chrony/sources.d
driftfile /var/lib/chrony/chrony.drift
makestep 1 3
leapsectz right/UTC
`)},
		"etc/chrony/conf.d/10-step.conf":  {Data: []byte("! makestep 9 9\n  MakeStep 0.1 -1\n")},
		"etc/chrony/conf.d/20-slew.conf":  {Data: []byte("maxslewrate 500\nleapsecmode slew\n")},
		"etc/chrony/conf.d/README":        {Data: []byte("makestep 5 -1\n")},
		"usr/share/chrony/20-slew.conf":   {Data: []byte("maxslewrate 1\n")},
		"etc/chrony/includes/a.conf":      {Data: []byte("makestep 2 -1\n")},
		"etc/chrony/includes/b.conf":      {Data: []byte("makestep 3 1\n")},
		"etc/chrony/loop.conf":            {Data: []byte("include /etc/chrony/loop.conf\n")},
		"etc/chrony/bad.conf":             {Data: []byte("makestep 1\n")},
		"etc/chrony/include.conf":         {Data: []byte("include /etc/chrony/includes/*.conf\n")},
		"etc/chrony/two-confdirs.conf":    {Data: []byte("confdir /etc/chrony/conf.d /usr/share/chrony\n")},
		"etc/chrony/empty.conf":           {Data: []byte("")},
		"etc/chrony/fast-slew-limit.conf": {Data: []byte("maxslewrate 100000\n")},
	}
	for _, tc := range []struct {
		name    string
		path    string
		want    *Audit
		wantErr string
	}{
		{
			name: "debian with a runtime step in conf.d",
			path: "/etc/chrony/chrony.conf",
			want: &Audit{
				Path:           "/etc/chrony/chrony.conf",
				Files:          []string{"/etc/chrony/chrony.conf", "/etc/chrony/conf.d/10-step.conf", "/etc/chrony/conf.d/20-slew.conf"},
				MakeStep:       &MakeStep{Threshold: 1, Limit: 3, File: "/etc/chrony/chrony.conf", Line: 7},
				MaxSlewRate:    500e-6,
				MaxSlewRateSet: true,
				LeapSecMode:    "slew",
			},
		},
		{
			name: "include glob in name order, last makestep wins",
			path: "/etc/chrony/include.conf",
			want: &Audit{
				Path:        "/etc/chrony/include.conf",
				Files:       []string{"/etc/chrony/include.conf", "/etc/chrony/includes/a.conf", "/etc/chrony/includes/b.conf"},
				MakeStep:    &MakeStep{Threshold: 3, Limit: 1, File: "/etc/chrony/includes/b.conf", Line: 1},
				MaxSlewRate: DefaultMaxSlewRate,
				LeapSecMode: "system",
			},
		},
		{
			name: "confdirs: an earlier directory hides the same name",
			path: "/etc/chrony/two-confdirs.conf",
			want: &Audit{
				Path:           "/etc/chrony/two-confdirs.conf",
				Files:          []string{"/etc/chrony/two-confdirs.conf", "/etc/chrony/conf.d/10-step.conf", "/etc/chrony/conf.d/20-slew.conf"},
				MakeStep:       &MakeStep{Threshold: 0.1, Limit: -1, File: "/etc/chrony/conf.d/10-step.conf", Line: 2},
				MaxSlewRate:    500e-6,
				MaxSlewRateSet: true,
				LeapSecMode:    "slew",
			},
		},
		{
			name: "empty",
			path: "/etc/chrony/empty.conf",
			want: &Audit{Path: "/etc/chrony/empty.conf", Files: []string{"/etc/chrony/empty.conf"}, MaxSlewRate: DefaultMaxSlewRate, LeapSecMode: "system"},
		},
		{
			name: "maxslewrate is capped like chronyd does",
			path: "/etc/chrony/fast-slew-limit.conf",
			want: &Audit{Path: "/etc/chrony/fast-slew-limit.conf", Files: []string{"/etc/chrony/fast-slew-limit.conf"}, MaxSlewRate: DefaultMaxSlewRate, MaxSlewRateSet: true, LeapSecMode: "system"},
		},
		{name: "missing", path: "/etc/chrony/nope.conf", wantErr: "reading chrony configuration /etc/chrony/nope.conf: open etc/chrony/nope.conf: file does not exist (set chrony.conf_path to its location, or to \"\" to turn the audit off)"},
		{name: "include loop", path: "/etc/chrony/loop.conf", wantErr: "reading /etc/chrony/loop.conf: includes nested more than 10 deep (does a file include itself?)"},
		{name: "bad makestep", path: "/etc/chrony/bad.conf", wantErr: `/etc/chrony/bad.conf:1: makestep needs a threshold and a limit, got "1"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := AuditFS(debian, tc.path)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("error = %v, want %s", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("audit (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFindings(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		a    Audit
		want []Finding
	}{
		{
			name: "runtime step and kernel leap second",
			a:    Audit{MakeStep: &MakeStep{Threshold: 0.1, Limit: -1, File: "/etc/chrony/conf.d/x.conf", Line: 4}, MaxSlewRate: DefaultMaxSlewRate, LeapSecMode: "system", RTCSync: true},
			want: []Finding{
				{Warning: true, Text: `/etc/chrony/conf.d/x.conf:4 has "makestep 0.1 -1": chronyd may step the clock at any time when its offset exceeds 0.1 s, which breaks leases, locks and timeouts that trust the wall clock. Change it to "makestep 0.1 3" so that chronyd steps only in its first three clock updates after it starts and slews afterwards.`},
				{Text: `leapsecmode is "system": at a leap second the kernel steps the clock back by one second. To spread it over hours instead, set "leapsecmode slew" (or "smoothtime 400 0.001 leaponly" on servers) together with "maxslewrate 1000".`},
				{Text: "chronyd slews the clock by at most 0.0833333 s per second (maxslewrate 83333.3 ppm): correcting a 1 s offset takes at least 12 s."},
			},
		},
		{
			name: "steps at start only, slewed leap seconds",
			a:    Audit{MakeStep: &MakeStep{Threshold: 1, Limit: 3, File: "/etc/chrony/chrony.conf", Line: 7}, MaxSlewRate: 1000e-6, LeapSecMode: "slew", RTCSync: true},
			want: []Finding{
				{Text: `/etc/chrony/chrony.conf:7 has "makestep 1 3": chronyd may step the clock only in its first 3 clock updates after it starts, and slews afterwards.`},
				{Text: "chronyd slews the clock by at most 0.001 s per second (maxslewrate 1000 ppm): correcting a 1 s offset takes at least 1000 s."},
			},
		},
		{
			name: "no makestep",
			a:    Audit{MaxSlewRate: 500e-6, LeapSecMode: "ignore"},
			want: []Finding{
				{Text: "There is no makestep directive: chronyd corrects every offset by slewing and never steps the clock after it starts."},
				{Text: "There is no rtcsync directive: chronyd leaves the kernel's STA_UNSYNC flag set while it disciplines the clock, so the kernel (adjtimex, clockwatch_kernel_synchronized, timedatectl's \"System clock synchronized\") says unsynchronised, and the real-time clock is not kept in step. clockwatch judges synchronisation by chronyd's own status and the kernel's maxerror, so this changes none of its verdicts; add \"rtcsync\" for tools that read the kernel's flag."},
				{Text: "chronyd slews the clock by at most 0.0005 s per second (maxslewrate 500 ppm): correcting a 1 s offset takes at least 2000 s."},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tc.want, tc.a.Findings()); diff != "" {
				t.Errorf("findings (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAuditFindings(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	missing := filepath.Join(dir, "chrony.conf")
	got := AuditFindings(missing)
	want := []Finding{{Warning: true, Text: `Cannot audit chrony's configuration: reading chrony configuration ` + missing + `: open ` + missing + `: no such file or directory (set chrony.conf_path to its location, or to "" to turn the audit off).`}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	// A real file, through the real file system, with a relative include.
	conf := "makestep 0.5 -1\nrtcsync\ninclude " + filepath.Join(dir, "*.inc") + "\n"
	if err := os.WriteFile(missing, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "slew.inc"), []byte("maxslewrate 1000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got = AuditFindings(missing)
	if len(got) != 3 || !got[0].Warning || !strings.Contains(got[0].Text, `Change it to "makestep 0.5 3"`) || !strings.Contains(got[2].Text, "maxslewrate 1000 ppm") {
		t.Errorf("findings = %+v, want the runtime step warning first and the include's maxslewrate", got)
	}
}
