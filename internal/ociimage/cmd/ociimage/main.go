// Command ociimage writes clockwatch's OCI image archive from a static
// binary (make image, scripts/image.sh). It prints the image's digest.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/clockwatch/clockwatch/internal/ociimage"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "ociimage:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("ociimage", flag.ContinueOnError)
	bin := fs.String("binary", "", "the static clockwatch binary")
	arch := fs.String("arch", "", "its GOARCH: amd64 or arm64")
	version := fs.String("version", "", "the version, for the labels and the tag")
	revision := fs.String("revision", "", "the commit, for the labels")
	epoch := fs.String("source-date-epoch", os.Getenv("SOURCE_DATE_EPOCH"), "the time of every file, in seconds since 1970 (the commit's time)")
	name := fs.String("name", "", "the reference the archive names the image by, e.g. clockwatch:1.2.3")
	source := fs.String("source", "", "the repository URL, for the source label")
	out := fs.String("o", "", "the archive to write")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *bin == "" || *out == "" || *epoch == "" {
		return fmt.Errorf("-binary, -o and -source-date-epoch (or SOURCE_DATE_EPOCH) are required")
	}
	secs, err := strconv.ParseInt(*epoch, 10, 64)
	if err != nil {
		return fmt.Errorf("-source-date-epoch: %w", err)
	}
	b, err := os.ReadFile(*bin)
	if err != nil {
		return err
	}
	created := time.Unix(secs, 0)
	img, err := ociimage.Build(ociimage.Options{Binary: b, Arch: *arch, Version: *version, Revision: *revision,
		Created: created, Name: *name, Source: *source})
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(*out), ".image-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := img.WriteArchive(tmp, created); err != nil {
		tmp.Close()
		return fmt.Errorf("writing %s: %w", *out, err)
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), *out); err != nil {
		return err
	}
	fmt.Printf("%s %s\n", *out, img.Digest)
	return nil
}
