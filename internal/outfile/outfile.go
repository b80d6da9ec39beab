// Package outfile opens the files bpftape writes so that writing never
// destroys data: every verb that writes (record, export, report, heatmap,
// merge, repair) goes through it.
//
// The rules:
//
//   - A regular-file output is written to a new temporary file in the same
//     directory (created O_EXCL, mode 0600, named .NAME.*.tmp) and renamed
//     into place only by Commit. Discard, or a failure in Commit, removes
//     the temporary file: a failure leaves no partial file and never
//     removes a file the command did not create.
//   - An existing output is refused (ErrExists) unless Options.Force; a file
//     that appears meanwhile is not replaced either (the rename does not
//     replace without Force).
//   - An output that is one of Options.Inputs is refused (ErrSameAsInput),
//     compared by device and inode after resolving symbolic links, so that
//     "./x", "x", a hard link and a link to it all match.
//   - An output that is not a regular file, such as a device (/dev/null), a
//     FIFO or a socket, is written in place and never removed or truncated.
//     It needs no Force.
//   - A symbolic link as the output is not followed into creating or
//     replacing another file (ErrSymlink, naming the link and its target);
//     a link to a device or a FIFO (/dev/stdout) is written in place.
//     Links among the folders above the output are followed: the folder is
//     where the user asked the file to go.
//   - New files are created with mode 0600: captures and what is derived
//     from them hold host names and command lines.
//
// Each system keeps these rules with its own primitives:
//
//   - Linux: files are created O_EXCL|O_NOFOLLOW, mode 0600; renameat2
//     with RENAME_NOREPLACE renames without replacing (a file system
//     without it gets link(2) and unlink(2), which fail the same way); the
//     folder is fsynced after the rename.
//   - macOS: the same, with renamex_np(RENAME_EXCL) for the rename (link
//     and unlink where the file system lacks it).
//   - Other Unix systems: the same, with link and unlink for the rename.
//   - Windows: files are created with CreateFile(CREATE_NEW) and
//     FILE_FLAG_OPEN_REPARSE_POINT, so that neither a file nor a symbolic
//     link, junction or other reparse point at the name is opened or
//     followed; MoveFileEx without MOVEFILE_REPLACE_EXISTING (and with
//     MOVEFILE_WRITE_THROUGH, which makes it durable) renames without
//     replacing; with Force, MoveFileEx with MOVEFILE_REPLACE_EXISTING. A
//     reparse point of any kind at the output counts as a symbolic link
//     (ErrSymlink). Windows has no mode bits, and 0600 means nothing
//     there: a new file gets the access control list its folder passes
//     on to new files, and bpftape sets none of its own, so that an
//     output is as private as the folder it is written to.
//
// A capture being recorded must stay readable if the recorder is killed
// (SIGKILL, power loss): readers recover its complete batches and
// 'bpftape repair' copies them to a standard file. Options.Progressive
// serves it: a new output is created O_EXCL at its final name (so it can
// only be the command's own file, and Discard removes only that file),
// while an existing regular file replaced with Force is written to a
// temporary file renamed over it at Commit, so that the old capture stays
// whole until the new one is finished; a recorder killed meanwhile leaves
// the new capture in the temporary file .NAME.*.tmp next to it.
//
// The refusals are *Error values wrapping ErrExists, ErrSameAsInput,
// ErrSymlink or ErrIsDir: the caller's mistake, which bpftape reports with
// exit status 2. Other errors are the system's (I/O, permissions).
package outfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/bpftape/bpftape/internal/usage"
)

// Refusals, wrapped in an *Error.
var (
	ErrExists      = errors.New("exists")
	ErrSameAsInput = errors.New("is an input")
	ErrSymlink     = errors.New("is a symbolic link")
	ErrIsDir       = errors.New("is a directory")
)

// Error is a refused output: Err is one of the refusals above. A refusal is
// the caller's to fix: errors.Is(err, usage.ErrUsage) holds.
type Error struct {
	Path   string // the output as given
	Target string // ErrSymlink: where the link points
	Input  string // ErrSameAsInput: the input it is
	Err    error
}

func (e *Error) Error() string {
	switch e.Err {
	case ErrExists:
		return fmt.Sprintf("output %s exists: give --force to replace it, or another output", e.Path)
	case ErrSameAsInput:
		if e.Input == e.Path {
			return fmt.Sprintf("output %s is the input itself: give another output", e.Path)
		}
		return fmt.Sprintf("output %s is the input %s: give another output", e.Path, e.Input)
	case ErrSymlink:
		if e.Target == "" { // a reparse point that is no link (Windows), or a link gone meanwhile
			return fmt.Sprintf("output %s is a symbolic link or reparse point: not followed, to create or replace no other file; give another output", e.Path)
		}
		return fmt.Sprintf("output %s is a symbolic link to %s: not followed, to create or replace no other file; give the target itself", e.Path, e.Target)
	}
	return fmt.Sprintf("output %s %v", e.Path, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// Is makes a refusal a usage error (package usage).
func (e *Error) Is(target error) bool { return target == usage.ErrUsage }

// Options say how an output may be opened.
type Options struct {
	// Force replaces an existing regular file.
	Force bool
	// Inputs are the files the command reads; the output may be none of them.
	Inputs []string
	// Progressive is for a file that must be readable while it is written
	// (a recording): a new one is created at its final name.
	Progressive bool
}

type kind int

const (
	temporary kind = iota // written to tmp, renamed to path by Commit
	created               // created O_EXCL at path (Progressive)
	inPlace               // a device, FIFO or socket: written as it is
)

// File is an output being written. Its methods are not safe for
// concurrent use.
type File struct {
	*os.File // the file written: the temporary one, or the output itself
	path     string
	tmp      string
	kind     kind
	force    bool
	done     bool               // committed or discarded; under unfinishedMu
	mkName   func(n int) string // CreateNumbered: the final name n
	own      fs.FileInfo        // created: the file made, to remove only it
}

// Check applies the rules to path without opening anything: verbs call it
// before their work, so that a refused output costs nothing. It returns
// whether path is an existing file that is not regular (written in place).
func Check(path string, o Options) (special bool, err error) {
	if path == "" {
		return false, errors.New("no output file")
	}
	if st, err := os.Stat(path); err == nil {
		for _, in := range o.Inputs {
			if ist, err := os.Stat(in); err == nil && os.SameFile(st, ist) {
				return false, &Error{Path: path, Input: in, Err: ErrSameAsInput}
			}
		}
	}
	lst, err := os.Lstat(path)
	switch {
	case err != nil:
		// Not there, or not to be looked at (a missing folder, no
		// permission): opening it says why, when it comes to that.
		return false, nil
	case isLink(lst):
		target, _ := os.Readlink(path)
		st, err := os.Stat(path)
		if err == nil && !st.Mode().IsRegular() && !st.IsDir() {
			return true, nil // /dev/stdout, a link to a FIFO
		}
		if err == nil && st.IsDir() {
			return false, &Error{Path: path, Err: ErrIsDir}
		}
		if errors.Is(err, fs.ErrNotExist) {
			target += " (which does not exist)"
		}
		return false, &Error{Path: path, Target: target, Err: ErrSymlink}
	case lst.IsDir():
		return false, &Error{Path: path, Err: ErrIsDir}
	case !lst.Mode().IsRegular():
		return true, nil
	case !o.Force:
		return false, &Error{Path: path, Err: ErrExists}
	}
	return false, nil
}

// Create checks path (see Check) and opens it for writing: a temporary file
// in its folder, the file itself for a device or FIFO, or, with
// o.Progressive, a new file at path. Commit puts it in place; Discard (or
// a failed Commit) removes what Create made.
func Create(path string, o Options) (*File, error) {
	special, err := Check(path, o)
	if err != nil {
		return nil, err
	}
	if special {
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return nil, err
		}
		if st, err := f.Stat(); err != nil || st.Mode().IsRegular() {
			f.Close()
			return nil, fmt.Errorf("output %s changed while it was opened", path)
		}
		return &File{File: f, path: path, kind: inPlace}, nil
	}
	if o.Progressive {
		f, err := openNew(path)
		if err == nil {
			st, err := f.Stat()
			if err != nil {
				f.Close()
				os.Remove(path)
				return nil, err
			}
			return track(&File{File: f, path: path, kind: created, own: st}), nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return nil, err
		}
		if !o.Force { // it appeared since Check
			return nil, &Error{Path: path, Err: ErrExists}
		}
		// Force over an existing file: a temporary file, as below.
	}
	f, err := createTemp(filepath.Dir(path), filepath.Base(path))
	if err != nil {
		return nil, err
	}
	return track(&File{File: f, path: path, tmp: f.Name(), kind: temporary, force: o.Force}), nil
}

// CreateNumbered starts a new file in dir that Commit names name(n) for
// the first n from 0 whose name is free then: it never replaces a file.
func CreateNumbered(dir string, name func(n int) string) (*File, error) {
	f, err := createTemp(dir, name(0))
	if err != nil {
		return nil, err
	}
	return track(&File{File: f, tmp: f.Name(), kind: temporary, mkName: name}), nil
}

func createTemp(dir, name string) (*os.File, error) {
	base := name
	if len(base) > 200 {
		base = base[:200]
	}
	// os.CreateTemp opens O_EXCL with mode 0600: on Windows, CREATE_NEW
	// with FILE_FLAG_OPEN_REPARSE_POINT (package syscall), which follows
	// no reparse point either.
	f, err := os.CreateTemp(dir, "."+base+".*.tmp")
	if err != nil {
		// The error names the output, not the temporary file's name.
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, &fs.PathError{Op: "create", Path: filepath.Join(dir, name), Err: err}
	}
	return f, nil
}

// Name is the output's final name (a CreateNumbered file has it once
// committed).
func (f *File) Name() string { return f.path }

// Commit finishes the output: it syncs and closes the file and renames a
// temporary file into place (replacing an existing file only with Force).
// When it fails, it removes the temporary file.
func (f *File) Commit() error {
	if !f.finish() {
		return errors.New("output already committed or discarded")
	}
	var err error
	if f.kind != inPlace {
		err = f.File.Sync()
	}
	if cerr := f.File.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		f.removeOwn()
		return fmt.Errorf("write %s: %w", f.displayName(), err)
	}
	if f.kind != temporary {
		return nil
	}
	if f.mkName != nil {
		dir := filepath.Dir(f.tmp)
		for n := 0; ; n++ {
			f.path = filepath.Join(dir, f.mkName(n))
			if err = renameNoReplace(f.tmp, f.path); !errors.Is(err, fs.ErrExist) {
				break
			}
		}
	} else if f.force {
		err = renameReplace(f.tmp, f.path)
	} else if err = renameNoReplace(f.tmp, f.path); errors.Is(err, fs.ErrExist) {
		err = &Error{Path: f.path, Err: ErrExists}
	}
	if err != nil {
		os.Remove(f.tmp)
		return err
	}
	syncDir(filepath.Dir(f.path))
	return nil
}

// Discard closes the file and removes what Create made: the temporary file,
// or the new file of a progressive output if it is still there; never a
// device, a FIFO, or a file the command did not create. It does nothing
// after Commit.
func (f *File) Discard() error {
	if !f.finish() {
		return nil
	}
	err := f.File.Close()
	f.removeOwn()
	return err
}

// unfinished are the files neither committed nor discarded, for DiscardAll.
var (
	unfinishedMu sync.Mutex
	unfinished   = map[*File]bool{}
)

func track(f *File) *File {
	unfinishedMu.Lock()
	unfinished[f] = true
	unfinishedMu.Unlock()
	return f
}

// finish marks f committed or discarded; false if it already was.
func (f *File) finish() bool {
	unfinishedMu.Lock()
	defer unfinishedMu.Unlock()
	if f.done {
		return false
	}
	f.done = true
	delete(unfinished, f)
	return true
}

// DiscardAll discards every file neither committed nor discarded yet: a
// command interrupted by a signal calls it before it exits, so that it
// leaves no temporary file.
func DiscardAll() {
	unfinishedMu.Lock()
	pending := make([]*File, 0, len(unfinished))
	for f := range unfinished {
		pending = append(pending, f)
	}
	unfinishedMu.Unlock()
	for _, f := range pending {
		f.Discard()
	}
}

// removeOwn removes the file Create made, if it is one.
func (f *File) removeOwn() {
	switch f.kind {
	case temporary:
		os.Remove(f.tmp)
	case created:
		// Only if path is still the file created: it may have been
		// replaced since (by a user, or another program).
		if now, err := os.Lstat(f.path); err == nil && os.SameFile(f.own, now) {
			os.Remove(f.path)
		}
	}
}

func (f *File) displayName() string {
	if f.path != "" {
		return f.path
	}
	return f.tmp
}

// CheckDir checks a folder that new files go into (a partitioned export):
// it may exist, but not as a symbolic link (ErrSymlink) or something other
// than a folder.
func CheckDir(path string) error {
	st, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return err
	case isLink(st):
		target, _ := os.Readlink(path)
		return &Error{Path: path, Target: target, Err: ErrSymlink}
	case !st.IsDir():
		return fmt.Errorf("output %s is not a folder", path)
	}
	return nil
}

// MkdirAll makes dir and the folders under base leading to it (mode 0700),
// refusing a symbolic link among those under base: files created there
// stay under base.
func MkdirAll(base, dir string) error {
	rel, err := filepath.Rel(base, dir)
	if err != nil {
		return err
	}
	if err := CheckDir(base); err != nil {
		return err
	}
	if err := os.MkdirAll(base, 0o700); err != nil {
		return err
	}
	p := base
	for _, part := range strings.Split(rel, string(filepath.Separator)) {
		if part == "." {
			continue
		}
		p = filepath.Join(p, part)
		if err := os.Mkdir(p, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
		if err := CheckDir(p); err != nil {
			return err
		}
	}
	return nil
}
