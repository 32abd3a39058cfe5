package peers

import (
	"bufio"
	"bytes"
	"crypto/aes"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/beevik/ntp"
)

// KeyType is a symmetric key's algorithm, as NTP's key files name it.
type KeyType string

// The algorithms: AES-CMAC (RFC 8573, what chrony and ntpd recommend; a
// 16-byte MAC) and the keyed digests SHA256 and SHA512, truncated to 20
// bytes as ntpd and github.com/beevik/ntp send them in NTPv4. MD5 and SHA1
// are not offered.
const (
	KeyAES128 KeyType = "AES128"
	KeyAES256 KeyType = "AES256"
	KeySHA256 KeyType = "SHA256"
	KeySHA512 KeyType = "SHA512"
)

// Key is one symmetric key.
type Key struct {
	ID    uint32
	Type  KeyType
	Bytes []byte
}

// macLen is the digest's length on the wire.
func (k Key) macLen() int {
	if k.Type == KeyAES128 || k.Type == KeyAES256 {
		return 16
	}
	return 20
}

// mac returns the digest of payload under k.
func (k Key) mac(payload []byte) []byte {
	switch k.Type {
	case KeyAES128, KeyAES256:
		return cmac(k.Bytes, payload)
	case KeySHA512:
		h := sha512.New()
		h.Write(k.Bytes)
		h.Write(payload)
		return h.Sum(nil)[:20]
	default:
		h := sha256.New()
		h.Write(k.Bytes)
		h.Write(payload)
		return h.Sum(nil)[:20]
	}
}

// appendMAC appends k's key id and digest of b (all of it) to b.
func (k Key) appendMAC(b []byte) []byte {
	d := k.mac(b)
	b = binary.BigEndian.AppendUint32(b, k.ID)
	return append(b, d...)
}

// auth is the key as github.com/beevik/ntp takes it.
func (k Key) auth() ntp.AuthOptions {
	t := map[KeyType]ntp.AuthType{KeyAES128: ntp.AuthAES128, KeyAES256: ntp.AuthAES256, KeySHA256: ntp.AuthSHA256, KeySHA512: ntp.AuthSHA512}[k.Type]
	return ntp.AuthOptions{Type: t, Key: "HEX:" + hex.EncodeToString(k.Bytes), KeyID: k.ID}
}

// Keys are the keys of a key file, by id.
type Keys map[uint32]Key

// verify finds a MAC at the end of b that one of ks verifies: it returns
// the payload before the MAC and the key. ok is false when no key's MAC is
// there or its digest is wrong.
func (ks Keys) verify(b []byte) (payload []byte, k Key, ok bool) {
	for _, n := range []int{16, 20} { // the digest lengths a key may have
		if len(b) < headerLen+4+n {
			continue
		}
		at := len(b) - 4 - n
		key, found := ks[binary.BigEndian.Uint32(b[at:])]
		if !found || key.macLen() != n {
			continue
		}
		if hmac.Equal(key.mac(b[:at]), b[at+4:]) {
			return b[:at], key, true
		}
	}
	return nil, Key{}, false
}

// cmac is AES-CMAC (RFC 4493) of msg under key.
func cmac(key, msg []byte) []byte {
	c, err := aes.NewCipher(key)
	if err != nil {
		panic(err) // key lengths are checked when the file is read
	}
	var k1, k2 [16]byte
	c.Encrypt(k1[:], k1[:])
	double(&k1)
	k2 = k1
	double(&k2)
	var x [16]byte
	var block [16]byte
	n := (len(msg) + 15) / 16
	if n == 0 {
		n = 1
	}
	for i := 0; i < n-1; i++ {
		subtleXOR(x[:], msg[i*16:(i+1)*16])
		c.Encrypt(x[:], x[:])
	}
	last := msg[(n-1)*16:]
	if len(last) == 16 {
		copy(block[:], last)
		subtleXOR(block[:], k1[:])
	} else {
		copy(block[:], last)
		block[len(last)] = 0x80
		subtleXOR(block[:], k2[:])
	}
	subtleXOR(x[:], block[:])
	c.Encrypt(x[:], x[:])
	return x[:]
}

// double is the multiplication by x in GF(2^128) of RFC 4493's subkeys.
func double(b *[16]byte) {
	carry := b[0] >> 7
	for i := 0; i < 15; i++ {
		b[i] = b[i]<<1 | b[i+1]>>7
	}
	b[15] <<= 1
	b[15] ^= 0x87 * carry
}

func subtleXOR(dst, src []byte) {
	for i := range dst {
		dst[i] ^= src[i]
	}
}

// ReadKeys reads a key file: one key a line, "ID TYPE KEY" as chrony's
// and ntpd's key files write it (ID 1 to 65535, TYPE one of AES128, AES256,
// SHA256, SHA512; KEY "HEX:" and hex digits, or ASCII text, with or without
// "ASCII:"); blank lines and lines starting with # are skipped. The file
// must not be readable by others. Errors name the file and the line.
func ReadKeys(path string) (Keys, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Mode().Perm()&0o004 != 0 {
		return nil, fmt.Errorf("%s: readable by everyone (mode %04o): the keys are secrets; chmod o-r it", path, st.Mode().Perm())
	}
	return parseKeys(io.LimitReader(f, 1<<20), path)
}

func parseKeys(r io.Reader, name string) (Keys, error) {
	ks := Keys{}
	sc := bufio.NewScanner(r)
	var errs []error
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		k, err := parseKey(strings.Fields(text))
		if err == nil && ks[k.ID].Bytes != nil {
			err = fmt.Errorf("key %d is defined twice", k.ID)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s:%d: %w", name, line, err))
			continue
		}
		ks[k.ID] = k
	}
	if err := sc.Err(); err != nil {
		errs = append(errs, fmt.Errorf("%s: %w", name, err))
	}
	if len(errs) == 0 && len(ks) == 0 {
		errs = append(errs, fmt.Errorf("%s: no key", name))
	}
	return ks, errors.Join(errs...)
}

func parseKey(f []string) (Key, error) {
	if len(f) != 3 {
		return Key{}, fmt.Errorf("want \"ID TYPE KEY\", got %d fields", len(f))
	}
	id, err := strconv.ParseUint(f[0], 10, 32)
	if err != nil || id < 1 || id > 65535 {
		return Key{}, fmt.Errorf("key id %q: want 1 to 65535", f[0])
	}
	k := Key{ID: uint32(id), Type: KeyType(strings.ToUpper(f[1]))}
	if !slices.Contains([]KeyType{KeyAES128, KeyAES256, KeySHA256, KeySHA512}, k.Type) {
		return Key{}, fmt.Errorf("key %d: type %q: want AES128, AES256, SHA256 or SHA512", id, f[1])
	}
	switch v := f[2]; {
	case strings.HasPrefix(v, "HEX:"):
		if k.Bytes, err = hex.DecodeString(v[4:]); err != nil {
			return Key{}, fmt.Errorf("key %d: not hex after HEX: (%v)", id, err)
		}
	default:
		k.Bytes = []byte(strings.TrimPrefix(v, "ASCII:"))
	}
	want := map[KeyType]int{KeyAES128: 16, KeyAES256: 32}[k.Type]
	switch {
	case want != 0 && len(k.Bytes) != want:
		return Key{}, fmt.Errorf("key %d: %s takes a key of %d bytes, got %d", id, k.Type, want, len(k.Bytes))
	case want == 0 && (len(k.Bytes) < 16 || len(k.Bytes) > 32):
		// github.com/beevik/ntp cuts keyed digests' keys at 32 bytes.
		return Key{}, fmt.Errorf("key %d: %s takes a key of 16 to 32 bytes, got %d", id, k.Type, len(k.Bytes))
	}
	if bytes.Equal(k.Bytes, make([]byte, len(k.Bytes))) {
		return Key{}, fmt.Errorf("key %d: all zero", id)
	}
	return k, nil
}
