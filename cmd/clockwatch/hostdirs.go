//go:build linux

package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/alecthomas/kingpin/v2"
	"golang.org/x/sys/unix"
)

// addHostDirsCommand is the DaemonSet's init container
// (deploy/kubernetes/daemonset.yaml): the kubelet creates a missing
// DirectoryOrCreate host path as root 0755, where the daemon, non-root,
// cannot write; this makes /run/clockwatch and /var/lib/clockwatch the
// daemon's user's, as systemd's RuntimeDirectory= and StateDirectory= do on a
// packaged host. It needs CAP_CHOWN and CAP_FOWNER, nothing else.
func addHostDirsCommand(app *kingpin.Application, c *cli) subcommand {
	cmd := app.Command("host-dirs", "Create the daemon's directories on the node (the Kubernetes init container): owned by --uid:--gid, mode --mode. Only the last component is created (its parent must exist); a symbolic link anywhere in the path, or a '..', is refused.").Hidden()
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
			parts, err := dirComponents(d)
			if err != nil {
				fmt.Fprintf(c.stderr, "clockwatch host-dirs: %v\n", err)
				return 2
			}
			created, err := hostDir(d, parts, *uid, *gid, m)
			if err != nil {
				fmt.Fprintf(c.stderr, "clockwatch host-dirs: %v\n", err)
				return 1
			}
			what := "existed"
			if created {
				what = "created"
			}
			fmt.Fprintf(c.stdout, "%s: %s, owner %d:%d, mode %04o\n", d, what, *uid, *gid, m)
		}
		return 0
	}}
}

// dirComponents splits an absolute path into its names, refusing "..", "."
// and empty names (a path that does not say plainly where it goes).
func dirComponents(dir string) ([]string, error) {
	if !strings.HasPrefix(dir, "/") {
		return nil, fmt.Errorf("%q: want an absolute path", dir)
	}
	parts := strings.Split(strings.TrimSuffix(dir[1:], "/"), "/")
	for _, p := range parts {
		switch p {
		case "..", ".", "":
			return nil, fmt.Errorf("%q: a %q component: want a plain absolute path (no '..', '.' or '//')", dir, p)
		}
	}
	if len(parts) == 0 || parts[0] == "" {
		return nil, fmt.Errorf("%q: not a directory host-dirs prepares", dir)
	}
	return parts, nil
}

// hostDir walks down to dir one component at a time with openat(O_NOFOLLOW),
// so that no symbolic link on the way is followed (a linked directory gave
// its root-owned target to the daemon's user), creates the last component
// only (mkdirat: the parents must exist), then sets owner and mode through
// the directory's own descriptor (fchown, fchmod), never by path.
func hostDir(dir string, parts []string, uid, gid int, mode uint32) (created bool, err error) {
	fd, err := unix.Open("/", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return false, fmt.Errorf("opening /: %w", err)
	}
	defer func() { unix.Close(fd) }()
	walked := ""
	refuse := func(parent int, name string, err error) error {
		at := walked + "/" + name
		var st unix.Stat_t
		if unix.Fstatat(parent, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil {
			switch st.Mode & unix.S_IFMT {
			case unix.S_IFLNK:
				return fmt.Errorf("%s: %s is a symbolic link: refusing to follow it (give the real path)", dir, at)
			case unix.S_IFDIR:
			default:
				return fmt.Errorf("%s: %s is not a directory", dir, at)
			}
		}
		if errors.Is(err, unix.ENOENT) {
			return fmt.Errorf("%s: %s does not exist: host-dirs creates only the last component (is the host path mounted?)", dir, at)
		}
		return fmt.Errorf("%s: opening %s: %w", dir, at, err)
	}
	for _, name := range parts[:len(parts)-1] {
		// O_PATH|O_DIRECTORY|O_NOFOLLOW fails on a link (ENOTDIR).
		next, err := unix.Openat(fd, name, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return false, refuse(fd, name, err)
		}
		unix.Close(fd)
		fd = next
		walked += "/" + name
	}
	last := parts[len(parts)-1]
	switch err := unix.Mkdirat(fd, last, mode); {
	case err == nil:
		created = true
	case errors.Is(err, unix.EEXIST): // a directory, or a link: the open below tells
	default:
		return false, fmt.Errorf("%s: creating it: %w", dir, err)
	}
	d, err := unix.Openat(fd, last, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return created, refuse(fd, last, err)
	}
	defer unix.Close(d)
	if err := unix.Fchown(d, uid, gid); err != nil {
		return created, fmt.Errorf("%s: giving it to %d:%d (CAP_CHOWN): %w", dir, uid, gid, err)
	}
	// After the chown, which clears set-id bits; mkdirat's mode went
	// through the umask.
	if err := unix.Fchmod(d, mode); err != nil {
		return created, fmt.Errorf("%s: setting mode %04o (CAP_FOWNER): %w", dir, mode, err)
	}
	return created, nil
}
