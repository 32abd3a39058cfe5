// Command mixin regenerates the files clockwatch ships from its monitoring
// mixin: run from the repository root, `go run ./mixin/cmd/mixin` (or `make
// mixin`) rewrites alerts/clockwatch.rules.yml and dashboards/clockwatch.json.
// With -config '{"clockwatchSelector": "job=\"node\""}' and -out DIR it
// writes files for another setup instead.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/clockwatch/clockwatch/mixin/generate"
)

func main() { os.Exit(run()) }

func run() int {
	dir := flag.String("mixin", "mixin", "directory of the mixin (mixin.libsonnet, "+generate.Entry+")")
	out := flag.String("out", ".", "directory to write the generated files under (the repository root)")
	config := flag.String("config", "", "JSON object merged into the mixin's _config")
	flag.Parse()
	var cfg map[string]any
	if *config != "" {
		if err := json.Unmarshal([]byte(*config), &cfg); err != nil {
			fmt.Fprintf(os.Stderr, "mixin: -config: want a JSON object: %v\n", err)
			return 2
		}
	}
	files, err := generate.Generate(*dir, cfg)
	if err != nil {
		fmt.Fprintf(os.Stderr, "mixin: %v\n", err)
		return 1
	}
	for _, name := range generate.Names(files) {
		path := filepath.Join(*out, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			fmt.Fprintf(os.Stderr, "mixin: %v\n", err)
			return 1
		}
		if err := os.WriteFile(path, files[name], 0o644); err != nil {
			fmt.Fprintf(os.Stderr, "mixin: %v\n", err)
			return 1
		}
		fmt.Println(path)
	}
	return 0
}
