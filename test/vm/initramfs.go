package vm

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"strings"
)

// cpio newc file types (the S_IF* bits of the mode field).
const (
	modeDir     = 0o040000
	modeFile    = 0o100000
	modeSymlink = 0o120000
	modeCharDev = 0o020000
)

// entry is one member of an initramfs.
type entry struct {
	name     string // without a leading slash, as the kernel wants it
	mode     uint32 // type and permission bits
	data     []byte // contents of a file made in memory, or a symlink's target
	hostPath string // contents come from this host file instead
	size     int64  // length of hostPath
	rdev     [2]uint32
}

// initramfs collects the members of a cpio archive, adding each parent
// directory once, and writes them in name order so that the archive depends
// only on its contents.
type initramfs struct {
	entries map[string]entry
}

func newInitramfs() *initramfs { return &initramfs{entries: map[string]entry{}} }

func (r *initramfs) mkdirAll(dir string) {
	dir = clean(dir)
	for dir != "" && dir != "." {
		if _, ok := r.entries[dir]; !ok {
			r.entries[dir] = entry{name: dir, mode: modeDir | 0o755}
		}
		dir = path.Dir(dir)
	}
}

func (r *initramfs) add(e entry) {
	e.name = clean(e.name)
	r.mkdirAll(path.Dir(e.name))
	r.entries[e.name] = e
}

// addBytes adds a file made in memory.
func (r *initramfs) addBytes(name string, perm uint32, data []byte) {
	r.add(entry{name: name, mode: modeFile | perm, data: data})
}

// addHostFile adds a copy of a host file, keeping its permission bits.
func (r *initramfs) addHostFile(name, hostPath string) error {
	st, err := os.Stat(hostPath)
	if err != nil {
		return fmt.Errorf("adding %s to the initramfs: %w", name, err)
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("adding %s to the initramfs: %s is not a regular file", name, hostPath)
	}
	r.add(entry{name: name, mode: modeFile | uint32(st.Mode().Perm()), hostPath: hostPath, size: st.Size()})
	return nil
}

func (r *initramfs) addSymlink(name, target string) {
	r.add(entry{name: name, mode: modeSymlink | 0o777, data: []byte(target)})
}

func (r *initramfs) addCharDev(name string, perm, major, minor uint32) {
	r.add(entry{name: name, mode: modeCharDev | perm, rdev: [2]uint32{major, minor}})
}

func clean(name string) string { return strings.TrimPrefix(path.Clean("/"+name), "/") }

// writeTo writes the archive in the "new ASCII" (newc) cpio format the kernel
// unpacks: a 110-byte hexadecimal header, the NUL-terminated name and the
// data, each padded to four bytes, ended by the TRAILER!!! member.
func (r *initramfs) writeTo(w io.Writer) error {
	names := make([]string, 0, len(r.entries))
	for n := range r.entries {
		names = append(names, n)
	}
	sort.Strings(names) // Parents sort before their children.
	bw := bufio.NewWriterSize(w, 1<<20)
	for i, n := range names {
		if err := writeEntry(bw, uint32(i+1), r.entries[n]); err != nil {
			return err
		}
	}
	if err := writeEntry(bw, 0, entry{name: "TRAILER!!!"}); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("writing the initramfs: %w", err)
	}
	return nil
}

func writeEntry(w *bufio.Writer, ino uint32, e entry) error {
	size := int64(len(e.data))
	if e.hostPath != "" {
		size = e.size
	}
	nlink := uint32(1)
	if e.mode&0o170000 == modeDir {
		nlink = 2
	}
	fmt.Fprintf(w, "070701%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X",
		ino, e.mode, 0, 0, nlink, 0, size, 0, 0, e.rdev[0], e.rdev[1], len(e.name)+1, 0)
	w.WriteString(e.name)
	w.WriteByte(0)
	pad(w, 110+len(e.name)+1)
	if e.hostPath != "" {
		f, err := os.Open(e.hostPath)
		if err != nil {
			return fmt.Errorf("adding %s to the initramfs: %w", e.name, err)
		}
		n, err := io.Copy(w, f)
		f.Close()
		if err != nil {
			return fmt.Errorf("adding %s to the initramfs: copying %s: %w", e.name, e.hostPath, err)
		}
		if n != size {
			return fmt.Errorf("adding %s to the initramfs: %s changed size while copied (%d, then %d bytes)", e.name, e.hostPath, size, n)
		}
	} else {
		w.Write(e.data)
	}
	pad(w, int(size))
	return nil
}

func pad(w *bufio.Writer, n int) {
	for ; n%4 != 0; n++ {
		w.WriteByte(0)
	}
}
