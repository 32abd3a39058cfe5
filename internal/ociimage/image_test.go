package ociimage

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite testdata/ from what the code builds")

func options(arch string) Options {
	return Options{Binary: []byte("\x7fELF not really a binary"), Arch: arch, Version: "1.2.3", Revision: "0123abcd",
		Created: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC), Name: "clockwatch:1.2.3", Source: "https://github.com/clockwatch/clockwatch"}
}

// The archive is a function of its inputs: built twice, byte for byte the
// same; and the digests match the golden ones, so that a change of Go's
// gzip, tar or JSON output (which would change every release's digest)
// shows up here rather than in two users' registries.
func TestReproducible(t *testing.T) {
	t.Parallel()
	var golden strings.Builder
	for _, arch := range []string{"amd64", "arm64"} {
		var archives [2]bytes.Buffer
		var digests [2]string
		for i := range archives {
			img, err := Build(options(arch))
			if err != nil {
				t.Fatal(err)
			}
			if err := img.WriteArchive(&archives[i], options(arch).Created); err != nil {
				t.Fatal(err)
			}
			digests[i] = img.Digest
		}
		if !bytes.Equal(archives[0].Bytes(), archives[1].Bytes()) || digests[0] != digests[1] {
			t.Errorf("%s: two builds differ: %s, %s", arch, digests[0], digests[1])
		}
		fmt.Fprintf(&golden, "%s %s\n", arch, digests[0])
		fmt.Fprintf(&golden, "%s", listing(t, archives[0].Bytes()))
	}
	checkGolden(t, "testdata/image.golden", golden.String())
}

// listing names every file of the archive and of its layer, with owner and
// mode: the non-root user's directories, nothing else.
func listing(t *testing.T, archive []byte) string {
	t.Helper()
	var b strings.Builder
	tr := tar.NewReader(bytes.NewReader(archive))
	var index struct{ Manifests []descriptor }
	blobs := map[string][]byte{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(tr)
		fmt.Fprintf(&b, "  %s %o %d:%d %d\n", h.Name, h.Mode, h.Uid, h.Gid, h.ModTime.Unix())
		if h.Name == "index.json" {
			if err := json.Unmarshal(data, &index); err != nil {
				t.Fatal(err)
			}
		}
		if strings.HasPrefix(h.Name, "blobs/sha256/") {
			blobs["sha256:"+strings.TrimPrefix(h.Name, "blobs/sha256/")] = data
		}
	}
	if len(index.Manifests) != 1 {
		t.Fatalf("index.json has %d manifests, want 1", len(index.Manifests))
	}
	var m struct {
		Config descriptor
		Layers []descriptor
	}
	if err := json.Unmarshal(blobs[index.Manifests[0].Digest], &m); err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(&b, "  config %s\n", blobs[m.Config.Digest])
	zr, err := gzip.NewReader(bytes.NewReader(blobs[m.Layers[0].Digest]))
	if err != nil {
		t.Fatal(err)
	}
	lr := tar.NewReader(zr)
	for {
		h, err := lr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "  layer %s %o %d:%d %d", h.Name, h.Mode, h.Uid, h.Gid, h.Size)
		for _, k := range slices.Sorted(maps.Keys(h.PAXRecords)) {
			fmt.Fprintf(&b, " %s=%x", k, h.PAXRecords[k])
		}
		b.WriteString("\n")
	}
	return b.String()
}

func TestBuildRefusesBadInput(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		mod  func(*Options)
		want string
	}{
		"no binary":  {func(o *Options) { o.Binary = nil }, "no binary"},
		"bad arch":   {func(o *Options) { o.Arch = "riscv64" }, `architecture "riscv64": want amd64 or arm64`},
		"no version": {func(o *Options) { o.Version = "" }, "no version"},
	} {
		o := options("amd64")
		tc.mod(&o)
		_, err := Build(o)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", name, err, tc.want)
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
