package timesyncd

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"
)

func variants(m map[string]any) map[string]dbus.Variant {
	out := map[string]dbus.Variant{}
	for k, v := range m {
		out[k] = dbus.MakeVariant(v)
	}
	return out
}

func TestDecodeProperties(t *testing.T) {
	t.Parallel()
	type addr = struct {
		Family int32
		Addr   []byte
	}
	with := func(k string, v any) map[string]any {
		m := syncedProps()
		if v == nil {
			delete(m, k)
		} else {
			m[k] = v
		}
		return m
	}
	v6 := netip.MustParseAddr("2001:db8::1").As16()
	for _, tc := range []struct {
		name    string
		props   map[string]any
		check   func(Properties) string
		wantErr string
	}{
		{name: "IPv6 server", props: with("ServerAddress", addr{10, v6[:]}), check: func(p Properties) string {
			if p.ServerAddress.String() != "2001:db8::1" {
				return p.ServerAddress.String()
			}
			return ""
		}},
		{name: "no server (AF_UNSPEC)", props: with("ServerAddress", addr{0, nil}), check: func(p Properties) string {
			if p.ServerAddress.IsValid() || p.Server() != "ntp.example" {
				return p.Server()
			}
			return ""
		}},
		{name: "older systemd without the poll bounds", props: with("PollIntervalMinUSec", nil), check: func(p Properties) string {
			if p.PollIntervalMin != 0 || p.PollInterval != 64*time.Second {
				return p.PollIntervalMin.String()
			}
			return ""
		}},
		{name: "a family that does not fit its bytes", props: with("ServerAddress", addr{2, v6[:]}), wantErr: "property ServerAddress: family 2 with 16 bytes"},
		{name: "poll interval of another type", props: with("PollIntervalUSec", "64s"), wantErr: "property PollIntervalUSec has signature s"},
		{name: "no NTPMessage", props: with("NTPMessage", nil), wantErr: "no NTPMessage property"},
		{name: "a reference ID of 3 bytes", props: with("NTPMessage", wireMessage{RefID: []byte{1, 2, 3}}), wantErr: "reference ID of 3 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p, err := decodeProperties(variants(tc.props))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if why := tc.check(p); why != "" {
				t.Errorf("decoded %+v: %s", p, why)
			}
		})
	}
}
