package throwawayroot

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"
)

// Command returns cmd set to start in a new, private mount namespace: mounts
// it (and Enter in it) makes are invisible to the host and disappear when
// the namespace's last process exits. Go's os/exec makes / recursively
// private in the child before it execs, so no mount propagates back.
func Command(cmd *exec.Cmd) *exec.Cmd {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Unshareflags |= syscall.CLONE_NEWNS
	return cmd
}

// Enter makes the calling process's root an overlay of the host's / whose
// writes go to a tmpfs mounted on scratch (an existing, empty directory), and
// chdirs to the new /. /proc, /dev and /sys (read-only) are the host's,
// bound in; /run and /tmp are fresh tmpfs, so no runtime state of the host
// (a running daemon's socket, /run/clockwatch) shows through.
//
// Enter refuses to mount anything unless the process runs in a mount
// namespace of its own (started with Command): in the host's namespace the
// tmpfs and the overlay would be the host's mounts. It affects the whole
// process (chroot is per process), so call it before starting goroutines
// that use paths.
func Enter(scratch string) error {
	if err := privateNamespace(); err != nil {
		return err
	}
	if err := unix.Mount("clockwatch-throwaway", scratch, "tmpfs", 0, "mode=0755"); err != nil {
		return fmt.Errorf("throwaway root: mounting a tmpfs on %s: %w (it takes root with CAP_SYS_ADMIN: a privileged container or a VM)", scratch, err)
	}
	upper, work, root := filepath.Join(scratch, "upper"), filepath.Join(scratch, "work"), filepath.Join(scratch, "root")
	for _, d := range []string{upper, work, root} {
		if err := os.Mkdir(d, 0o755); err != nil {
			return fmt.Errorf("throwaway root: %w", err)
		}
	}
	opts := fmt.Sprintf("lowerdir=/,upperdir=%s,workdir=%s", upper, work)
	if err := unix.Mount("clockwatch-throwaway", root, "overlay", 0, opts); err != nil {
		return fmt.Errorf("throwaway root: mounting an overlay of / on %s (%s): %w", root, opts, err)
	}
	for _, b := range []struct {
		dir      string
		readOnly bool
	}{{"/proc", false}, {"/dev", false}, {"/sys", true}} {
		target := filepath.Join(root, b.dir)
		if err := unix.Mount(b.dir, target, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("throwaway root: binding %s: %w", b.dir, err)
		}
		if b.readOnly {
			if err := unix.Mount("", target, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY, ""); err != nil {
				return fmt.Errorf("throwaway root: making %s read-only: %w", b.dir, err)
			}
		}
	}
	for _, d := range []string{"/run", "/tmp"} {
		if err := unix.Mount("clockwatch-throwaway", filepath.Join(root, d), "tmpfs", 0, "mode=1777"); err != nil {
			return fmt.Errorf("throwaway root: mounting a tmpfs on %s: %w", d, err)
		}
	}
	if err := os.Chmod(filepath.Join(root, "run"), 0o755); err != nil {
		return fmt.Errorf("throwaway root: %w", err)
	}
	if err := unix.Chroot(root); err != nil {
		return fmt.Errorf("throwaway root: chroot %s: %w", root, err)
	}
	if err := os.Chdir("/"); err != nil {
		return fmt.Errorf("throwaway root: %w", err)
	}
	return Inside()
}

// Inside checks that / is an overlay, as it is after Enter: a guard for code
// about to change the system.
func Inside() error {
	var st unix.Statfs_t
	if err := unix.Statfs("/", &st); err != nil {
		return fmt.Errorf("throwaway root: statfs /: %w", err)
	}
	if st.Type != unix.OVERLAYFS_SUPER_MAGIC {
		return fmt.Errorf("throwaway root: / is not an overlay (filesystem type %#x): refusing to change it", st.Type)
	}
	return nil
}

// privateNamespace fails unless this process's mount namespace differs from
// its parent's (the process that started it with Command).
func privateNamespace() error {
	self, err := os.Readlink("/proc/self/ns/mnt")
	if err != nil {
		return fmt.Errorf("throwaway root: reading my mount namespace: %w", err)
	}
	parent, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/mnt", os.Getppid()))
	if err != nil {
		return fmt.Errorf("throwaway root: reading the parent's mount namespace: %w", err)
	}
	if self == parent {
		return errors.New("throwaway root: this process shares its parent's mount namespace (start it with throwawayroot.Command): refusing to mount over the host")
	}
	return nil
}
