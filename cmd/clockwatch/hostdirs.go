//go:build linux

package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/alecthomas/kingpin/v2"
)

// addHostDirsCommand is the DaemonSet's init container
// (deploy/kubernetes/daemonset.yaml): the kubelet creates a missing
// DirectoryOrCreate host path as root 0755, where the daemon, non-root,
// cannot write; this makes /run/clockwatch and /var/lib/clockwatch the
// daemon's user's, as systemd's RuntimeDirectory= and StateDirectory= do on a
// packaged host. It needs CAP_CHOWN and CAP_FOWNER, nothing else.
func addHostDirsCommand(app *kingpin.Application, c *cli) subcommand {
	cmd := app.Command("host-dirs", "Create the daemon's directories on the node (the Kubernetes init container): owned by --uid:--gid, mode --mode.").Hidden()
	uid := cmd.Flag("uid", "Owner.").Default("65532").Int()
	gid := cmd.Flag("gid", "Group (the stepdown socket's group: application pods join it).").Default("65532").Int()
	mode := cmd.Flag("mode", "Permission bits, octal.").Default("0750").String()
	dirs := cmd.Arg("dir", "Absolute paths.").Required().Strings()
	return subcommand{clause: cmd, run: func(context.Context) int {
		var m uint32
		if _, err := fmt.Sscanf(*mode, "%o", &m); err != nil || m > 0o7777 {
			fmt.Fprintf(c.stderr, "clockwatch host-dirs: --mode: want octal permission bits like 0750, got %q\n", *mode)
			return 2
		}
		for _, d := range *dirs {
			if !filepath.IsAbs(d) {
				fmt.Fprintf(c.stderr, "clockwatch host-dirs: %q: want an absolute path\n", d)
				return 2
			}
			if err := os.MkdirAll(d, os.FileMode(m)); err != nil {
				fmt.Fprintf(c.stderr, "clockwatch host-dirs: %v\n", err)
				return 1
			}
			if err := os.Chown(d, *uid, *gid); err != nil {
				fmt.Fprintf(c.stderr, "clockwatch host-dirs: %v\n", err)
				return 1
			}
			if err := os.Chmod(d, os.FileMode(m)); err != nil {
				fmt.Fprintf(c.stderr, "clockwatch host-dirs: %v\n", err)
				return 1
			}
			fmt.Fprintf(c.stdout, "%s: owner %d:%d, mode %04o\n", d, *uid, *gid, m)
		}
		return 0
	}}
}
