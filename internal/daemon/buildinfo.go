package daemon

import (
	"fmt"
	"runtime/debug"
	"strings"

	"github.com/prometheus/common/version"
)

// buildVersion describes the build for the landing page: what the release
// build stamped (make build sets the build date), else the version the
// command found (the module's, or the embedded VERSION file's) and what the
// Go toolchain recorded (VCS revision and time, modified or not), so a plain
// `go build` does not show "version=dev, branch=".
func buildVersion() string {
	if version.BuildDate != "" {
		return version.Info()
	}
	return describeBuild(debug.ReadBuildInfo())
}

func describeBuild(bi *debug.BuildInfo, ok bool) string {
	if !ok {
		return fmt.Sprintf("(version=%s, unknown build)", version.Version)
	}
	settings := map[string]string{}
	for _, s := range bi.Settings {
		settings[s.Key] = s.Value
	}
	v := version.Version
	if v == "" {
		v = bi.Main.Version // not set by cmd/clockwatch (a test)
	}
	parts := []string{"version=" + v}
	if rev := settings["vcs.revision"]; rev != "" {
		if len(rev) > 12 {
			rev = rev[:12]
		}
		if settings["vcs.modified"] == "true" {
			rev += "+modified"
		}
		parts = append(parts, "revision="+rev)
	}
	if t := settings["vcs.time"]; t != "" {
		parts = append(parts, "committed="+t)
	}
	parts = append(parts, "go="+bi.GoVersion)
	return "(" + strings.Join(parts, ", ") + ")"
}
