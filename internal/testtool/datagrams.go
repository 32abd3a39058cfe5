package testtool

import (
	"encoding/binary"
	"fmt"
)

// EncodeDatagrams stores datagrams (replies captured from a real daemon) as
// a 2-byte big-endian length followed by the bytes, one after the other:
// the format of the *.replies files in testdata/.
func EncodeDatagrams(ds [][]byte) []byte {
	var out []byte
	for _, d := range ds {
		out = binary.BigEndian.AppendUint16(out, uint16(len(d)))
		out = append(out, d...)
	}
	return out
}

// DecodeDatagrams reads what EncodeDatagrams wrote; a truncated last
// datagram is an error.
func DecodeDatagrams(b []byte) ([][]byte, error) {
	var ds [][]byte
	for len(b) > 0 {
		if len(b) < 2 {
			return ds, fmt.Errorf("a stray byte after %d datagrams", len(ds))
		}
		n := int(binary.BigEndian.Uint16(b))
		if len(b) < 2+n {
			return ds, fmt.Errorf("datagram %d is truncated: %d bytes of %d", len(ds)+1, len(b)-2, n)
		}
		ds = append(ds, b[2:2+n])
		b = b[2+n:]
	}
	return ds, nil
}
