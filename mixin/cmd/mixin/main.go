// Command mixin writes the files clockwatch ships, generated from its
// monitoring mixin, under the directory -out names: `go run ./mixin/cmd/mixin
// -out .` from the repository root (or `make mixin`) regenerates the shipped
// alerts/clockwatch.rules.yml, dashboards/clockwatch.json and their copies;
// with -config '{"clockwatchSelector": "job=\"node\""}' -out DIR it writes
// files for another setup under DIR. -out has no default: a command a reader
// copies from the docs never rewrites the checkout unasked.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/clockwatch/clockwatch/mixin/generate"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mixin", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("mixin", "mixin", "directory of the mixin (mixin.libsonnet, "+generate.Entry+")")
	out := fs.String("out", "", "directory to write the generated files under, each at its path in the repository (required: . in the repository's root regenerates the shipped files, as make mixin does)")
	config := fs.String("config", "", "JSON object merged into the mixin's _config")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "mixin: unexpected argument %q (flags only)\n", fs.Arg(0))
		return 2
	}
	if *out == "" {
		what := "the shipped files: -out . in the repository's root (make mixin)"
		if *config != "" {
			what = "your setup's files: -out DIR, a directory of your own (-out . would overwrite the repository's shipped files with them)"
		}
		fmt.Fprintf(stderr, "mixin: say where to write the files with -out; for %s\n", what)
		return 2
	}
	var cfg map[string]any
	if *config != "" {
		if err := json.Unmarshal([]byte(*config), &cfg); err != nil {
			fmt.Fprintf(stderr, "mixin: -config: want a JSON object: %v\n", err)
			return 2
		}
	}
	files, err := generate.Generate(*dir, cfg)
	if err != nil {
		fmt.Fprintf(stderr, "mixin: %v\n", err)
		return 1
	}
	for _, name := range generate.Names(files) {
		path := filepath.Join(*out, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			fmt.Fprintf(stderr, "mixin: %v\n", err)
			return 1
		}
		if err := os.WriteFile(path, files[name], 0o644); err != nil {
			fmt.Fprintf(stderr, "mixin: %v\n", err)
			return 1
		}
		fmt.Fprintln(stdout, path)
	}
	return 0
}
