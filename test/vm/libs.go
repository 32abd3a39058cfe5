package vm

import (
	"debug/elf"
	"fmt"
	"os"
	"path/filepath"
)

// sharedLibraries returns what a dynamically linked ELF executable needs at
// run time: its interpreter (the loader) and every library in the closure of
// its DT_NEEDED entries, as absolute host paths. A static executable needs
// nothing. The files are read, never run.
func sharedLibraries(exe string) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	f, err := elf.Open(exe)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", exe, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type != elf.PT_INTERP {
			continue
		}
		b := make([]byte, p.Filesz)
		if _, err := p.ReadAt(b, 0); err != nil {
			return nil, fmt.Errorf("reading the interpreter of %s: %w", exe, err)
		}
		interp := string(b[:len(b)-1]) // NUL-terminated
		out = append(out, interp)
		seen[filepath.Base(interp)] = true
	}
	queue, err := f.ImportedLibraries()
	if err != nil {
		return nil, fmt.Errorf("reading the libraries %s needs: %w", exe, err)
	}
	for len(queue) > 0 {
		name := queue[0]
		queue = queue[1:]
		if seen[name] {
			continue
		}
		seen[name] = true
		path, err := findLibrary(name)
		if err != nil {
			return nil, fmt.Errorf("%s needs %s: %w", exe, name, err)
		}
		out = append(out, path)
		lf, err := elf.Open(path)
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", path, err)
		}
		more, err := lf.ImportedLibraries()
		lf.Close()
		if err != nil {
			return nil, fmt.Errorf("reading the libraries %s needs: %w", path, err)
		}
		queue = append(queue, more...)
	}
	return out, nil
}

// findLibrary looks for a library by soname in the order of the Debian amd64
// loader's default directories, so that the guest's loader, without an
// ld.so.cache, finds it at the same path.
func findLibrary(soname string) (string, error) {
	libDirs := []string{"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64", "/lib", "/usr/lib"}
	for _, d := range libDirs {
		p := filepath.Join(d, soname)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
			return p, nil
		}
	}
	return "", fmt.Errorf("not found in %v", libDirs)
}
