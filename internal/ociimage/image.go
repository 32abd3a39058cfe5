package ociimage

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"strconv"
	"time"
)

// Media types of the OCI image specification (image-spec v1.1).
const (
	MediaTypeIndex    = "application/vnd.oci.image.index.v1+json"
	MediaTypeManifest = "application/vnd.oci.image.manifest.v1+json"
	MediaTypeConfig   = "application/vnd.oci.image.config.v1+json"
	MediaTypeLayer    = "application/vnd.oci.image.layer.v1.tar+gzip"
)

// The non-root user the image runs as: the number distroless images use for
// "nonroot", outside the ranges Debian gives system and login users, so that
// it is nobody on the host either. The DaemonSet's runAsUser says the same.
const (
	UID = 65532
	GID = 65532
)

// Options are the image's inputs.
type Options struct {
	// Binary is the static clockwatch binary for Arch.
	Binary []byte
	// Arch is the GOARCH (amd64, arm64): the platform's architecture.
	Arch string
	// Version and Revision are the build's version and commit, in the
	// labels.
	Version, Revision string
	// Created is the time every file and the config carry (the commit's
	// time, SOURCE_DATE_EPOCH); truncated to seconds.
	Created time.Time
	// Name is the reference the archive's index gives the image
	// (org.opencontainers.image.ref.name, the tag `podman load` gives it),
	// e.g. "clockwatch:1.2.3"; empty: none.
	Name string
	// Source is the project's repository URL for the source label.
	Source string
}

// File is one entry of the image's only layer.
type File struct {
	Path string
	Mode int64
	UID  int
	GID  int
	Dir  bool
	Data []byte
	// Xattrs are the file's extended attributes, as PAX records: a
	// container runtime sets them when it unpacks the layer.
	Xattrs map[string]string
}

// SysNiceCap is the security.capability attribute (vfs_cap_data, revision
// 2, little-endian) that gives the binary CAP_SYS_NICE as permitted, not
// effective: a non-root process keeps a capability the runtime granted it
// (the DaemonSet's capabilities.add) across its exec only through the file's
// capabilities, Kubernetes setting no ambient ones; without the effective
// bit a run without the capability (podman run --cap-drop all) still
// starts, and the daemon raises it itself (internal/sched).
var SysNiceCap = string([]byte{
	0, 0, 0, 2, // magic_etc: VFS_CAP_REVISION_2, no VFS_CAP_FLAGS_EFFECTIVE
	0, 0, 0x80, 0, 0, 0, 0, 0, // permitted, inheritable bits 0-31: CAP_SYS_NICE (23)
	0, 0, 0, 0, 0, 0, 0, 0, // bits 32-63: none
})

// Layer returns the files of the image's root filesystem, in the order
// they are written: the binary, a passwd and group naming the non-root user
// (so that `id` in the container, ps on the host and the kubelet's
// runAsNonRoot check see a user, not a bare number), and the directories the
// DaemonSet mounts over, owned by that user so that a plain `podman run`
// without mounts works too.
func Layer(o Options) []File {
	u := strconv.Itoa(UID)
	g := strconv.Itoa(GID)
	return []File{
		{Path: "clockwatch", Mode: 0o755, Data: o.Binary, Xattrs: map[string]string{"security.capability": SysNiceCap}},
		{Path: "etc", Mode: 0o755, Dir: true},
		{Path: "etc/clockwatch", Mode: 0o755, Dir: true},
		{Path: "etc/group", Mode: 0o644, Data: []byte("root:x:0:\nclockwatch:x:" + g + ":\n")},
		{Path: "etc/passwd", Mode: 0o644, Data: []byte("root:x:0:0:root:/:/sbin/nologin\nclockwatch:x:" + u + ":" + g + ":clockwatch:/var/lib/clockwatch:/sbin/nologin\n")},
		{Path: "run", Mode: 0o755, Dir: true},
		{Path: "run/clockwatch", Mode: 0o750, Dir: true, UID: UID, GID: GID},
		{Path: "tmp", Mode: 0o1777, Dir: true},
		{Path: "var", Mode: 0o755, Dir: true},
		{Path: "var/lib", Mode: 0o755, Dir: true},
		{Path: "var/lib/clockwatch", Mode: 0o750, Dir: true, UID: UID, GID: GID},
	}
}

// descriptor is an OCI content descriptor.
type descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int64             `json:"size"`
	Annotations map[string]string `json:"annotations,omitempty"`
	Platform    *platform         `json:"platform,omitempty"`
}

type platform struct {
	Architecture string `json:"architecture"`
	OS           string `json:"os"`
	Variant      string `json:"variant,omitempty"`
}

// Image is a built image: its blobs and the descriptor of its manifest.
type Image struct {
	// Digest is the manifest's digest ("sha256:..."): the image's identity
	// in a registry, what `podman inspect --format '{{.Digest}}'` prints.
	Digest string
	// ConfigDigest is the config's digest: the image ID podman shows.
	ConfigDigest string
	// LayerSize is the compressed size of the one layer, in bytes.
	LayerSize int64
	blobs     map[string][]byte
	index     []byte
}

// Labels returns the OCI annotations the image carries as labels
// (image-spec annotations.md).
func Labels(o Options) map[string]string {
	l := map[string]string{
		"org.opencontainers.image.title":       "clockwatch",
		"org.opencontainers.image.description": "Watches a node's clocks: steps, offsets and time daemons, exported to Prometheus; tells lock holders when the clock cannot be trusted.",
		"org.opencontainers.image.version":     o.Version,
		"org.opencontainers.image.revision":    o.Revision,
		"org.opencontainers.image.created":     o.Created.UTC().Truncate(time.Second).Format(time.RFC3339),
		"org.opencontainers.image.licenses":    "Apache-2.0",
		"org.opencontainers.image.vendor":      "clockwatch",
	}
	if o.Source != "" {
		l["org.opencontainers.image.source"] = o.Source
	}
	return l
}

// Build builds the image in memory.
func Build(o Options) (*Image, error) {
	if len(o.Binary) == 0 {
		return nil, errors.New("ociimage: no binary")
	}
	if o.Arch != "amd64" && o.Arch != "arm64" {
		return nil, fmt.Errorf("ociimage: architecture %q: want amd64 or arm64", o.Arch)
	}
	if o.Version == "" {
		return nil, errors.New("ociimage: no version")
	}
	created := o.Created.UTC().Truncate(time.Second)
	layer, diffID, err := tarLayer(Layer(o), created)
	if err != nil {
		return nil, err
	}
	img := &Image{blobs: map[string][]byte{}, LayerSize: int64(len(layer))}
	layerDesc := img.add(MediaTypeLayer, layer)

	// The image config (image-spec config.md). No Cmd: the daemon is the
	// default subcommand; `podman run IMAGE status` runs another.
	cfg := map[string]any{
		"created":      created.Format(time.RFC3339),
		"architecture": o.Arch,
		"os":           "linux",
		"config": map[string]any{
			"User":         strconv.Itoa(UID) + ":" + strconv.Itoa(GID),
			"Entrypoint":   []string{"/clockwatch"},
			"WorkingDir":   "/",
			"Env":          []string{"PATH=/", "GOMAXPROCS=1"},
			"ExposedPorts": map[string]any{"9847/tcp": map[string]any{}},
			"Labels":       Labels(o),
			"StopSignal":   "SIGTERM",
		},
		"rootfs": map[string]any{"type": "layers", "diff_ids": []string{diffID}},
		"history": []map[string]any{{
			"created":    created.Format(time.RFC3339),
			"created_by": "clockwatch internal/ociimage " + o.Version,
			"comment":    "the static clockwatch binary, passwd and group for its user, its directories",
		}},
	}
	cfgJSON, err := marshal(cfg)
	if err != nil {
		return nil, err
	}
	cfgDesc := img.add(MediaTypeConfig, cfgJSON)
	img.ConfigDigest = cfgDesc.Digest

	manifest := map[string]any{
		"schemaVersion": 2,
		"mediaType":     MediaTypeManifest,
		"config":        cfgDesc,
		"layers":        []descriptor{layerDesc},
		"annotations":   Labels(o),
	}
	mJSON, err := marshal(manifest)
	if err != nil {
		return nil, err
	}
	mDesc := img.add(MediaTypeManifest, mJSON)
	img.Digest = mDesc.Digest
	mDesc.Platform = &platform{Architecture: o.Arch, OS: "linux"}
	if o.Arch == "arm64" {
		mDesc.Platform.Variant = "v8"
	}
	if o.Name != "" {
		mDesc.Annotations = map[string]string{"org.opencontainers.image.ref.name": o.Name}
	}
	index := map[string]any{
		"schemaVersion": 2,
		"mediaType":     MediaTypeIndex,
		"manifests":     []descriptor{mDesc},
	}
	if img.index, err = marshal(index); err != nil {
		return nil, err
	}
	return img, nil
}

func (img *Image) add(mediaType string, b []byte) descriptor {
	sum := sha256.Sum256(b)
	d := "sha256:" + hex.EncodeToString(sum[:])
	img.blobs[d] = b
	return descriptor{MediaType: mediaType, Digest: d, Size: int64(len(b))}
}

// marshal encodes v as JSON; encoding/json sorts map keys, so the bytes
// (and the digests) do not depend on map order.
func marshal(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("ociimage: encoding JSON: %w", err)
	}
	return b, nil
}

// WriteArchive writes the image as an OCI layout in a tar archive
// (image-spec image-layout.md): oci-layout, index.json and the blobs.
func (img *Image) WriteArchive(w io.Writer, created time.Time) error {
	tw := tar.NewWriter(w)
	mtime := created.UTC().Truncate(time.Second)
	dirs := []string{"blobs", "blobs/sha256"}
	for _, d := range dirs {
		if err := tw.WriteHeader(header(d+"/", tar.TypeDir, 0o755, 0, mtime, 0, 0)); err != nil {
			return err
		}
	}
	files := []struct {
		name string
		data []byte
	}{
		{"oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`)},
		{"index.json", img.index},
	}
	digests := make([]string, 0, len(img.blobs))
	for d := range img.blobs {
		digests = append(digests, d)
	}
	slices.Sort(digests)
	for _, d := range digests {
		files = append(files, struct {
			name string
			data []byte
		}{path.Join("blobs/sha256", d[len("sha256:"):]), img.blobs[d]})
	}
	for _, f := range files {
		if err := tw.WriteHeader(header(f.name, tar.TypeReg, 0o644, int64(len(f.data)), mtime, 0, 0)); err != nil {
			return err
		}
		if _, err := tw.Write(f.data); err != nil {
			return err
		}
	}
	return tw.Close()
}

// tarLayer writes the files as a gzipped tar and returns it with the
// digest of the uncompressed tar (the config's diff_id).
func tarLayer(files []File, mtime time.Time) (gz []byte, diffID string, err error) {
	var raw bytes.Buffer
	tw := tar.NewWriter(&raw)
	for _, f := range files {
		name, typ, size := f.Path, byte(tar.TypeReg), int64(len(f.Data))
		if f.Dir {
			name, typ, size = f.Path+"/", tar.TypeDir, 0
		}
		h := header(name, typ, f.Mode, size, mtime, f.UID, f.GID)
		for k, v := range f.Xattrs {
			if h.PAXRecords == nil {
				h.PAXRecords, h.Format = map[string]string{}, tar.FormatPAX
			}
			h.PAXRecords["SCHILY.xattr."+k] = v
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, "", fmt.Errorf("ociimage: layer entry %s: %w", f.Path, err)
		}
		if !f.Dir {
			if _, err := tw.Write(f.Data); err != nil {
				return nil, "", fmt.Errorf("ociimage: layer entry %s: %w", f.Path, err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, "", err
	}
	sum := sha256.Sum256(raw.Bytes())
	var out bytes.Buffer
	// No name and a zero ModTime in the gzip header: compress/gzip's output
	// is then a function of the input and the level alone.
	zw, err := gzip.NewWriterLevel(&out, gzip.BestCompression)
	if err != nil {
		return nil, "", err
	}
	if _, err := zw.Write(raw.Bytes()); err != nil {
		return nil, "", err
	}
	if err := zw.Close(); err != nil {
		return nil, "", err
	}
	return out.Bytes(), "sha256:" + hex.EncodeToString(sum[:]), nil
}

// header is a tar header with nothing that differs between machines: no
// user or group names, no access or change times, the PAX format only where
// a field needs it (the binary's file capability; every name here is short).
func header(name string, typ byte, mode, size int64, mtime time.Time, uid, gid int) *tar.Header {
	return &tar.Header{Typeflag: typ, Name: name, Mode: mode, Size: size, ModTime: mtime,
		Uid: uid, Gid: gid, Format: tar.FormatUSTAR}
}
