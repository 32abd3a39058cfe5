package peers

import (
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestCMAC: RFC 4493's examples (section 4).
func TestCMAC(t *testing.T) {
	t.Parallel()
	key, _ := hex.DecodeString("2b7e151628aed2a6abf7158809cf4f3c")
	msg, _ := hex.DecodeString("6bc1bee22e409f96e93d7e117393172aae2d8a571e03ac9c9eb76fac45af8e5130c81c46a35ce411e5fbc1191a0a52eff69f2445df4f9b17ad2b417be66c3710")
	tests := []struct {
		n    int
		want string
	}{
		{0, "bb1d6929e95937287fa37d129b756746"},
		{16, "070a16b46b4d4144f79bdd9dd04a287c"},
		{40, "dfa66747de9ae63030ca32611497c827"},
		{64, "51f0bebf7e3b9d92fc49741779363cfe"},
	}
	for _, tc := range tests {
		if got := hex.EncodeToString(cmac(key, msg[:tc.n])); got != tc.want {
			t.Errorf("CMAC of %d bytes = %s, want %s", tc.n, got, tc.want)
		}
	}
}

// TestVerify: a MAC made with a key verifies with the key file holding it,
// and any other key id, digest or payload fails.
func TestVerify(t *testing.T) {
	t.Parallel()
	ks, err := parseKeys(strings.NewReader("1 AES128 HEX:000102030405060708090a0b0c0d0e0f\n2 SHA256 ASCII:sixteen-or-more-bytes\n3 sha512 thirty-two-bytes-of-secret-here!\n4 AES256 HEX:"+strings.Repeat("ab", 32)+"\n"), "keys")
	if err != nil {
		t.Fatal(err)
	}
	pkt := header{Version: 4, Mode: modeClient, Transmit: 42}.append(nil)
	for id := range uint32(4) {
		k := ks[id+1]
		signed := k.appendMAC(append([]byte(nil), pkt...))
		if len(signed) != headerLen+4+k.macLen() {
			t.Errorf("key %d: %d bytes", k.ID, len(signed))
		}
		payload, got, ok := ks.verify(signed)
		if !ok || got.ID != k.ID || len(payload) != headerLen {
			t.Errorf("key %d: verify = %d bytes, key %d, %v", k.ID, len(payload), got.ID, ok)
		}
		for i := range signed {
			bad := append([]byte(nil), signed...)
			bad[i] ^= 1
			if _, _, ok := ks.verify(bad); ok {
				t.Errorf("key %d: a bit flipped at byte %d verifies", k.ID, i)
				break
			}
		}
		if _, _, ok := (Keys{}).verify(signed); ok {
			t.Errorf("key %d: verified without keys", k.ID)
		}
	}
	if _, _, ok := ks.verify(pkt); ok {
		t.Error("an unsigned packet verifies")
	}
}

func TestParseKeys(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in string
		want     []string // errors, one a line
	}{
		{name: "good", in: "# keys\n\n1 AES128 HEX:000102030405060708090a0b0c0d0e0f\n65535 SHA256 0123456789abcdef\n"},
		{name: "empty", in: "# nothing\n", want: []string{"keys: no key"}},
		{name: "bad lines", in: "1 AES128\n0 SHA256 0123456789abcdef\n65536 SHA256 0123456789abcdef\nx SHA256 0123456789abcdef\n" +
			"2 MD5 0123456789abcdef\n3 AES128 HEX:00\n4 AES256 0123456789abcdef\n5 SHA256 short\n6 SHA256 HEX:zz\n" +
			"7 SHA256 HEX:00000000000000000000000000000000\n8 SHA256 " + strings.Repeat("x", 33) + "\n" +
			"9 SHA256 0123456789abcdef\n9 SHA256 0123456789abcdef\n",
			want: []string{
				`keys:1: want "ID TYPE KEY", got 2 fields`,
				`keys:2: key id "0": want 1 to 65535`,
				`keys:3: key id "65536": want 1 to 65535`,
				`keys:4: key id "x": want 1 to 65535`,
				`keys:5: key 2: type "MD5": want AES128, AES256, SHA256 or SHA512`,
				`keys:6: key 3: AES128 takes a key of 16 bytes, got 1`,
				`keys:7: key 4: AES256 takes a key of 32 bytes, got 16`,
				`keys:8: key 5: SHA256 takes a key of 16 to 32 bytes, got 5`,
				`keys:9: key 6: not hex after HEX: (encoding/hex: invalid byte: U+007A 'z')`,
				`keys:10: key 7: all zero`,
				`keys:11: key 8: SHA256 takes a key of 16 to 32 bytes, got 33`,
				`keys:13: key 9 is defined twice`,
			}},
	}
	for _, tc := range tests {
		_, err := parseKeys(strings.NewReader(tc.in), "keys")
		var got []string
		if err != nil {
			got = strings.Split(err.Error(), "\n")
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
}

// TestReadKeysMode: a key file everyone may read is refused.
func TestReadKeysMode(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "peers.keys")
	if err := os.WriteFile(path, []byte("1 SHA256 0123456789abcdef\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadKeys(path); err == nil || !strings.Contains(err.Error(), "readable by everyone (mode 0644)") {
		t.Errorf("ReadKeys of a 0644 file: %v", err)
	}
	if err := os.Chmod(path, 0o640); err != nil {
		t.Fatal(err)
	}
	if ks, err := ReadKeys(path); err != nil || len(ks) != 1 {
		t.Errorf("ReadKeys of a 0640 file: %v, %d keys", err, len(ks))
	}
}
