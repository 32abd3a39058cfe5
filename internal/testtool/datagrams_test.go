package testtool

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestDatagrams(t *testing.T) {
	t.Parallel()
	ds := [][]byte{[]byte("one"), {}, []byte(strings.Repeat("x", 300))}
	got, err := DecodeDatagrams(EncodeDatagrams(ds))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(ds, got); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	b := EncodeDatagrams(ds)
	for _, cut := range []int{1, 10} {
		if _, err := DecodeDatagrams(b[:len(b)-cut]); err == nil {
			t.Errorf("cut %d bytes: no error", cut)
		}
	}
}
