package daemon

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/clockwatch/clockwatch/internal/config"
)

func TestCollectorsApply(t *testing.T) {
	t.Parallel()
	def := config.Default()
	base := &def
	base.NTPProbes.Servers = []string{"ntp1.example"}
	for _, tc := range []struct {
		name   string
		c      Collectors
		chrony bool
		ntpd   bool
		probes []string
		err    string
	}{
		{name: "none", chrony: base.Chrony.On(), ntpd: base.Ntpd.On(), probes: base.NTPProbes.Servers},
		{name: "off", c: Collectors{"chrony": false, "ntp_probes": false}, ntpd: base.Ntpd.On()},
		{name: "on", c: Collectors{"chrony": true, "ntpd": true, "ntp_probes": true}, chrony: true, ntpd: true, probes: base.NTPProbes.Servers},
		{name: "unknown", c: Collectors{"gps": true}, err: `no optional collector "gps"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := tc.c.Apply(base)
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Chrony.On() != tc.chrony || got.Ntpd.On() != tc.ntpd {
				t.Errorf("chrony %v ntpd %v, want %v %v", got.Chrony.On(), got.Ntpd.On(), tc.chrony, tc.ntpd)
			}
			if diff := cmp.Diff(tc.probes, got.NTPProbes.Servers); diff != "" {
				t.Errorf("ntp_probes.servers (-want +got):\n%s", diff)
			}
		})
	}
	if len(base.NTPProbes.Servers) != 1 || !base.Chrony.On() {
		t.Error("Apply changed the configuration it was given")
	}
}

func TestCollectorsProbesNeedServers(t *testing.T) {
	t.Parallel()
	def := config.Default()
	if _, err := (Collectors{"ntp_probes": true}).Apply(&def); err == nil {
		t.Error("--collector.ntp_probes without servers: no error")
	}
}
