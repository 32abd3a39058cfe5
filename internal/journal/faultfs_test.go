package journal

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
)

// ErrCrashed is what every operation of a FaultFS returns from its crash
// point on.
var ErrCrashed = errors.New("injected crash")

// Model says what a crash leaves on disk.
type Model int

const (
	// ProcessCrash is the process dying: every operation before the crash
	// point reached the file system (the kernel keeps what was written,
	// fsync'd or not).
	ProcessCrash Model = iota
	// PowerCut is the machine losing power: of the operations before the
	// crash point only what was made durable survives, as LazyFS and
	// CrashMonkey model it. A file's data is what it held at its last
	// fsync; a directory's entries (creations, renames, removals, new
	// subdirectories) are what it held at its last directory fsync. Files
	// and directories that existed before the FaultFS first saw them count
	// as durable.
	PowerCut
)

func (m Model) String() string {
	if m == PowerCut {
		return "power cut"
	}
	return "process crash"
}

// FaultFS wraps an FS and simulates a crash at its Nth durable operation
// (counted from 1): a write, fsync, truncate, rename, removal, creation,
// chmod or directory fsync. That operation does not happen, and every later
// one fails with ErrCrashed.
//
// Under ProcessCrash the files hold exactly what the operations before the
// crash point left (a write of more than one byte at the crash point happens
// torn, half of it reaching the disk, when Torn is set). Under PowerCut the
// directories FaultFS has seen are rewritten, at the crash point, to what was
// durable (see PowerCut); with Torn, half of the bytes appended to a file
// since its last fsync survive too, as when the kernel had flushed some of
// its pages. The operation at the crash point never happens. Nothing else of the underlying FS needs to sync for real: the
// model keeps its own copy of what each fsync made durable.
//
// With CrashAt 0 nothing fails and Ops counts the operations, so that a test
// can enumerate every crash point of a scenario. Skip makes the fsyncs and
// directory fsyncs called from one source line (a SyncSite) succeed without
// making anything durable: a test removes each sync in turn and shows that
// the crash suite fails without it.
type FaultFS struct {
	FS
	CrashAt int
	Torn    bool
	Model   Model
	// Skip names a SyncSite whose syncs do nothing (empty: none).
	Skip string

	mu    sync.Mutex
	ops   int
	log   []string
	sites map[string]int
	dirs  map[string]*dirState
}

var _ FS = (*FaultFS)(nil)

// node is a file or directory as the power-cut model sees it.
type node struct {
	dir     bool
	path    string // where it is now ("" once removed)
	durable []byte // a file's data at its last fsync
}

// dirState is a directory's entries now and at its last fsync.
type dirState struct {
	cur, durable map[string]*node
}

// Ops returns how many durable operations were attempted.
func (f *FaultFS) Ops() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.ops
}

// Crashed reports whether the crash point has been reached.
func (f *FaultFS) Crashed() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.crashedLocked()
}

func (f *FaultFS) crashedLocked() bool { return f.CrashAt > 0 && f.ops >= f.CrashAt }

// Log returns the operations attempted, one "n op path" each, to name a
// crash point in a test failure.
func (f *FaultFS) Log() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.log...)
}

// SyncSites returns the source lines ("file.go:123 function") that called
// Sync or SyncDir, with how many times each did.
func (f *FaultFS) SyncSites() map[string]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make(map[string]int, len(f.sites))
	for k, v := range f.sites {
		out[k] = v
	}
	return out
}

// syncSite names the caller of a FaultFS sync method: skip frames up from
// the method itself.
func syncSite(skip int) string {
	pc, file, line, ok := runtime.Caller(skip + 1)
	if !ok {
		return "?"
	}
	name := "?"
	if fn := runtime.FuncForPC(pc); fn != nil {
		name = fn.Name()
		name = name[strings.LastIndexByte(name, '/')+1:]
	}
	return fmt.Sprintf("%s:%d %s", filepath.Base(file), line, name)
}

// op counts one durable operation; it returns whether it may happen and
// whether it is the crash point itself, where a PowerCut is applied.
func (f *FaultFS) op(what, path string) (ok, atCrash bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.opLocked(what, path)
}

func (f *FaultFS) opLocked(what, path string) (ok, atCrash bool) {
	if f.crashedLocked() {
		return false, false
	}
	f.ops++
	f.log = append(f.log, fmt.Sprintf("%d %s %s", f.ops, what, filepath.Base(path)))
	if f.CrashAt > 0 && f.ops == f.CrashAt {
		if f.Model == PowerCut {
			f.powerCutLocked()
		}
		return false, true
	}
	return true, false
}

func (f *FaultFS) fail(what, path string) error {
	return fmt.Errorf("%s %s: %w", what, path, ErrCrashed)
}

// dirLocked returns the model of dir, reading it from disk the first time:
// what was there before counts as durable.
func (f *FaultFS) dirLocked(dir string) *dirState {
	dir = filepath.Clean(dir)
	if f.dirs == nil {
		f.dirs = map[string]*dirState{}
	}
	if d, ok := f.dirs[dir]; ok {
		return d
	}
	d := &dirState{cur: map[string]*node{}, durable: map[string]*node{}}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		n := &node{dir: e.IsDir(), path: p}
		if !n.dir {
			n.durable, _ = os.ReadFile(p)
		}
		d.cur[e.Name()], d.durable[e.Name()] = n, n
	}
	f.dirs[dir] = d
	return d
}

// nodeLocked returns the model of the entry at path, nil if there is none.
func (f *FaultFS) nodeLocked(path string) *node {
	return f.dirLocked(filepath.Dir(path)).cur[filepath.Base(path)]
}

// createdLocked records a new entry at path.
func (f *FaultFS) createdLocked(path string, dir bool) *node {
	n := &node{dir: dir, path: path}
	f.dirLocked(filepath.Dir(path)).cur[filepath.Base(path)] = n
	return n
}

// MkdirAll counts as an operation only when it would create something; an
// existing directory is read, not written. Each directory it creates is an
// entry of its parent, durable once the parent is synced.
func (f *FaultFS) MkdirAll(dir string, perm os.FileMode) error {
	if st, err := os.Stat(dir); err == nil && st.IsDir() && !f.Crashed() {
		return nil
	}
	var missing []string
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		if _, err := os.Stat(d); err == nil || d == filepath.Dir(d) {
			break
		}
		missing = append(missing, d)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if ok, _ := f.opLocked("mkdir", dir); !ok {
		return f.fail("mkdir", dir)
	}
	if err := f.FS.MkdirAll(dir, perm); err != nil {
		return err
	}
	for _, d := range slices.Backward(missing) {
		f.createdLocked(d, true)
		f.dirLocked(d)
	}
	return nil
}

// OpenFile counts as an operation when it may create the file.
func (f *FaultFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	if f.Crashed() {
		return nil, f.fail("open", name)
	}
	f.mu.Lock()
	n := f.nodeLocked(name)
	if flag&os.O_CREATE != 0 {
		if _, err := os.Stat(name); err != nil {
			if ok, _ := f.opLocked("create", name); !ok {
				f.mu.Unlock()
				return nil, f.fail("create", name)
			}
			n = nil
		}
	}
	f.mu.Unlock()
	file, err := f.FS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	if n == nil {
		n = f.createdLocked(name, false)
	}
	f.mu.Unlock()
	return &faultFile{File: file, fs: f, node: n}, nil
}

// CreateTemp is one operation.
func (f *FaultFS) CreateTemp(dir, pattern string) (File, error) {
	if ok, _ := f.op("create", filepath.Join(dir, pattern)); !ok {
		return nil, f.fail("create", filepath.Join(dir, pattern))
	}
	file, err := f.FS.CreateTemp(dir, pattern)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	n := f.createdLocked(file.Name(), false)
	f.mu.Unlock()
	return &faultFile{File: file, fs: f, node: n}, nil
}

// Rename is one operation: the entry moves in the model's current view.
func (f *FaultFS) Rename(from, to string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if ok, _ := f.opLocked("rename", to); !ok {
		return f.fail("rename", to)
	}
	if err := f.FS.Rename(from, to); err != nil {
		return err
	}
	src := f.dirLocked(filepath.Dir(from))
	n := src.cur[filepath.Base(from)]
	delete(src.cur, filepath.Base(from))
	if n == nil {
		n = &node{}
	}
	n.path = to
	f.dirLocked(filepath.Dir(to)).cur[filepath.Base(to)] = n
	return nil
}

// Remove is one operation.
func (f *FaultFS) Remove(name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if ok, _ := f.opLocked("remove", name); !ok {
		return f.fail("remove", name)
	}
	if err := f.FS.Remove(name); err != nil {
		return err
	}
	d := f.dirLocked(filepath.Dir(name))
	if n := d.cur[filepath.Base(name)]; n != nil {
		n.path = ""
	}
	delete(d.cur, filepath.Base(name))
	return nil
}

// Chmod is one operation.
func (f *FaultFS) Chmod(name string, mode os.FileMode) error {
	if ok, _ := f.op("chmod", name); !ok {
		return f.fail("chmod", name)
	}
	return f.FS.Chmod(name, mode)
}

// SyncDir is one operation: it makes dir's current entries durable.
func (f *FaultFS) SyncDir(dir string) error {
	site := syncSite(1)
	f.mu.Lock()
	defer f.mu.Unlock()
	if ok, _ := f.opLocked("syncdir", dir); !ok {
		return f.fail("syncdir", dir)
	}
	f.siteLocked(site)
	if err := f.FS.SyncDir(dir); err != nil {
		return err
	}
	if site != f.Skip {
		d := f.dirLocked(dir)
		d.durable = copyEntries(d.cur)
	}
	return nil
}

func (f *FaultFS) siteLocked(site string) {
	if f.sites == nil {
		f.sites = map[string]int{}
	}
	f.sites[site]++
}

func copyEntries(m map[string]*node) map[string]*node {
	out := make(map[string]*node, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// powerCutLocked rewrites every directory the model has seen to what was
// durable: entries not synced into their directory go, entries removed or
// renamed away without a directory sync come back, and each file holds the
// data of its last fsync (with Torn, plus half of what was appended since).
func (f *FaultFS) powerCutLocked() {
	dirs := make([]string, 0, len(f.dirs))
	for d := range f.dirs {
		dirs = append(dirs, d)
	}
	// Parents first, so that a directory whose own entry was not durable
	// goes before its contents are rewritten.
	slices.SortFunc(dirs, func(a, b string) int { return len(a) - len(b) })
	gone := map[string]bool{}
	// Read the current data first: a rename lost in one directory may bring
	// back a name another directory's file still uses.
	cur := map[*node][]byte{}
	for _, d := range dirs {
		for _, n := range f.dirs[d].durable {
			if !n.dir && n.path != "" {
				cur[n], _ = os.ReadFile(n.path)
			}
		}
	}
	for _, d := range dirs {
		if gone[d] || isUnder(d, gone) {
			continue
		}
		st := f.dirs[d]
		for name, n := range st.cur {
			p := filepath.Join(d, name)
			if n.dir {
				if st.durable[name] != n {
					os.RemoveAll(p)
					gone[p] = true
				}
				continue
			}
			os.Remove(p)
		}
		for name, n := range st.durable {
			p := filepath.Join(d, name)
			if n.dir {
				os.MkdirAll(p, 0o750)
				continue
			}
			data := n.durable
			if f.Torn {
				if now := cur[n]; len(now) > len(data) && bytes.HasPrefix(now, data) {
					data = now[:len(data)+(len(now)-len(data))/2]
				}
			}
			os.WriteFile(p, data, 0o640)
		}
	}
}

func isUnder(d string, gone map[string]bool) bool {
	for g := range gone {
		if strings.HasPrefix(d, g+string(filepath.Separator)) {
			return true
		}
	}
	return false
}

type faultFile struct {
	File
	fs   *FaultFS
	node *node
}

func (f *faultFile) Write(b []byte) (int, error) {
	ok, atCrash := f.fs.op("write", f.Name())
	if atCrash && f.fs.Torn && f.fs.Model == ProcessCrash && len(b) > 1 {
		n, _ := f.File.Write(b[:len(b)/2])
		return n, f.fs.fail("write", f.Name())
	}
	if !ok {
		return 0, f.fs.fail("write", f.Name())
	}
	return f.File.Write(b)
}

// Sync makes the file's data durable in the model: what it holds now.
func (f *faultFile) Sync() error {
	site := syncSite(1)
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if ok, _ := f.fs.opLocked("fsync", f.Name()); !ok {
		return f.fs.fail("fsync", f.Name())
	}
	f.fs.siteLocked(site)
	if err := f.File.Sync(); err != nil {
		return err
	}
	if site != f.fs.Skip {
		data, err := readAll(f.File)
		if err != nil {
			return err
		}
		f.node.durable = data
	}
	return nil
}

// readAll reads a file through ReadAt, leaving its offset where it was.
func readAll(f File) ([]byte, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	b := make([]byte, st.Size())
	if _, err := f.ReadAt(b, 0); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return b, nil
}

func (f *faultFile) Truncate(size int64) error {
	if ok, _ := f.fs.op("truncate", f.Name()); !ok {
		return f.fs.fail("truncate", f.Name())
	}
	return f.File.Truncate(size)
}

func (f *faultFile) Read(b []byte) (int, error) {
	if f.fs.Crashed() {
		return 0, f.fs.fail("read", f.Name())
	}
	return f.File.Read(b)
}

func (f *faultFile) ReadAt(b []byte, off int64) (int, error) {
	if f.fs.Crashed() {
		return 0, f.fs.fail("read", f.Name())
	}
	return f.File.ReadAt(b, off)
}
