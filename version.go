// Package clockwatch holds the repository's VERSION file for the binaries
// built from it: cmd/clockwatch embeds it, so that a plain `go build` or
// `go run` in a checkout knows the version it is a build of. It is no API
// (docs/architecture.md, "What is API").
package clockwatch

import (
	_ "embed"
	"strings"
)

//go:embed VERSION
var versionFile string

// Version is the VERSION file's version (X.Y.Z): the one this tree
// develops or releases.
func Version() string { return strings.TrimSpace(versionFile) }
