package elfsym

import (
	"debug/elf"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Links says which links OpenRegular follows on the way to a file.
type Links int

const (
	// FollowLinks follows every link, /proc's magic links included: for a
	// path the user named (a probe's binary), and for the links the kernel
	// keeps to a process's files (/proc/PID/map_files/START-END,
	// /proc/self/fd/N), which lead to the very file mapped or open.
	FollowLinks Links = iota
	// NoMagicLinks follows symbolic links but not /proc's magic links: for
	// the debug directories (--debug-dir, $BPFTAPE_DEBUG_DIRS,
	// /usr/lib/debug), whose owner decides where their links point.
	NoMagicLinks
	// NoLinks follows no link anywhere on the path: for a path whose
	// directories a traced process's user may write (the directory of a
	// traced binary, a path read from /proc/PID/maps).
	NoLinks
)

// ErrNotRegular is wrapped by the error of OpenRegular for a path that
// is not a regular file: a directory, FIFO, socket or device.
var ErrNotRegular = errors.New("not a regular file")

// ErrLinkRefused is wrapped by the error of OpenRegular with NoLinks for
// a path that leads through a symbolic link.
var ErrLinkRefused = errors.New("a symbolic link on the way, which is not followed there")

// openFlags are the flags a regular file is opened for reading with:
// nothing in them can block, make the file the recorder's controlling
// terminal, or leak it to a child.
const openFlags = unix.O_RDONLY | unix.O_NONBLOCK | unix.O_CLOEXEC | unix.O_NOCTTY

// OpenRegular opens the regular file at path for reading, following links
// as links says, and opens nothing else for reading: the path is first
// opened with O_PATH (no open of a device, no reader of a FIFO, nothing
// that can block), the descriptor's fstat must show a regular file, and
// only then is that very file opened (through /proc/self/fd) with
// O_RDONLY|O_NONBLOCK|O_CLOEXEC|O_NOCTTY, and checked again by fstat to be
// the same regular file. See the package documentation for which paths
// take which Links.
func OpenRegular(path string, links Links) (*os.File, error) {
	return openRegular(unix.AT_FDCWD, path, path, links, 0)
}

// OpenInRoot opens the regular file at path as the process whose root
// directory is root (/proc/PID/root) sees it, as OpenRegular does with
// NoLinks: root itself (a magic link) is followed, then path is resolved
// inside it (RESOLVE_IN_ROOT) without following any link.
func OpenInRoot(root, path string) (*os.File, error) {
	dfd, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: root, Err: err}
	}
	defer unix.Close(dfd)
	return openRegular(dfd, path, root+path, NoLinks, unix.RESOLVE_IN_ROOT)
}

// openRegular is OpenRegular of path relative to dirfd; name is the
// path for errors, resolve more RESOLVE_ flags.
func openRegular(dirfd int, path, name string, links Links, resolve uint64) (*os.File, error) {
	pfd, err := openPath(dirfd, path, links, resolve)
	if err != nil {
		if errors.Is(err, unix.ELOOP) && links == NoLinks {
			err = ErrLinkRefused
		}
		return nil, &os.PathError{Op: "open", Path: name, Err: err}
	}
	defer unix.Close(pfd)
	var pst unix.Stat_t
	if err := unix.Fstat(pfd, &pst); err != nil {
		return nil, &os.PathError{Op: "fstat", Path: name, Err: err}
	}
	if err := checkRegular(pst.Mode); err != nil {
		return nil, &os.PathError{Op: "open", Path: name, Err: err}
	}
	// The descriptor's magic link reopens the inode it holds, whatever
	// has happened to the path since.
	fd, err := unix.Open("/proc/self/fd/"+strconv.Itoa(pfd), openFlags, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: name, Err: err}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, &os.PathError{Op: "fstat", Path: name, Err: err}
	}
	if err := checkRegular(st.Mode); err != nil || st.Dev != pst.Dev || st.Ino != pst.Ino {
		unix.Close(fd)
		if err == nil {
			err = errors.New("another file than the one looked up")
		}
		return nil, &os.PathError{Op: "open", Path: name, Err: err}
	}
	// O_NONBLOCK means nothing to a regular file: cleared, so that os
	// does not try to poll it.
	if err := unix.SetNonblock(fd, false); err != nil {
		unix.Close(fd)
		return nil, &os.PathError{Op: "fcntl", Path: name, Err: err}
	}
	return os.NewFile(uintptr(fd), name), nil
}

// openPath opens path relative to dirfd with O_PATH, following links as
// links says.
func openPath(dirfd int, path string, links Links, resolve uint64) (int, error) {
	how := unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: resolve}
	switch links {
	case NoMagicLinks:
		how.Resolve |= unix.RESOLVE_NO_MAGICLINKS
	case NoLinks:
		how.Resolve |= unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS
	}
	for try := 0; ; try++ {
		fd, err := unix.Openat2(dirfd, path, &how)
		// EAGAIN: a rename or mount raced a lookup with RESOLVE_ flags.
		if err == unix.EINTR || err == unix.EAGAIN && try < 8 {
			continue
		}
		if err != unix.ENOSYS {
			return fd, err
		}
		break
	}
	// Before openat2 (Linux 5.6): O_NOFOLLOW refuses a link as the last
	// component only, and an O_PATH descriptor of one fails the fstat.
	flags := unix.O_PATH | unix.O_CLOEXEC
	if links != FollowLinks {
		flags |= unix.O_NOFOLLOW
	}
	if dirfd != unix.AT_FDCWD {
		path = "./" + strings.TrimLeft(path, "/")
	}
	for {
		fd, err := unix.Openat(dirfd, path, flags, 0)
		if err != unix.EINTR {
			return fd, err
		}
	}
}

// checkRegular returns an error wrapping ErrNotRegular, saying what the
// file is, unless mode is a regular file's.
func checkRegular(mode uint32) error {
	var what string
	switch mode & unix.S_IFMT {
	case unix.S_IFREG:
		return nil
	case unix.S_IFDIR:
		what = "a directory"
	case unix.S_IFIFO:
		what = "a FIFO"
	case unix.S_IFCHR:
		what = "a character device"
	case unix.S_IFBLK:
		what = "a block device"
	case unix.S_IFSOCK:
		what = "a socket"
	case unix.S_IFLNK:
		what = "a symbolic link"
	default:
		what = fmt.Sprintf("of type %#o", mode&unix.S_IFMT)
	}
	return fmt.Errorf("%s, %w", what, ErrNotRegular)
}

// openELF opens the ELF file at path with OpenRegular; the caller closes
// the returned *os.File, not the *elf.File.
func openELF(path string, links Links) (*elf.File, *os.File, error) {
	f, err := OpenRegular(path, links)
	if err != nil {
		return nil, nil, fmt.Errorf("elfsym: %w", err)
	}
	ef, err := newELF(f)
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("elfsym: %s: %w", path, err)
	}
	return ef, f, nil
}

// newELF is elf.NewFile, with a panic of debug/elf on a malformed file
// turned into an error.
func newELF(f *os.File) (ef *elf.File, err error) {
	defer func() {
		if r := recover(); r != nil {
			ef, err = nil, fmt.Errorf("malformed ELF file (%v)", r)
		}
	}()
	return elf.NewFile(f)
}

// missing reports whether err says that nothing is at a path (the
// candidates of a search that are not there).
func missing(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, unix.ENOTDIR)
}

// File is an ELF file opened by Open; Close closes the file too.
type File struct {
	*elf.File
	f *os.File
}

// Open opens the ELF file at path, a path that the user named (links are
// followed), as OpenRegular does: a FIFO or a device there is refused, not
// opened, so that reading a binary never blocks. It is elf.Open for every
// ELF file the recorder reads.
func Open(path string) (*File, error) {
	ef, f, err := openELF(path, FollowLinks)
	if err != nil {
		return nil, err
	}
	return &File{ef, f}, nil
}

// Close closes the ELF file and its file.
func (f *File) Close() error {
	f.File.Close()
	return f.f.Close()
}
