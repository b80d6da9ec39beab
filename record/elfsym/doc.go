// Package elfsym resolves the binaries and function symbols that uprobes
// attach to: program and library names to paths, symbols to the file
// offsets the kernel wants, and build IDs to tell binaries apart. The
// recorder's stack table reads the symbols of the files that traced
// processes map with it too.
//
// # Opening files
//
// The recorder runs as root and opens files that a traced process's user
// may have placed: a stripped binary's .gnu_debuglink names a file next to
// it, which may be a FIFO (an open for reading would wait for a writer
// forever), a device (whose open may have effects: a tape rewinds, a
// watchdog starts) or a symbolic link to either, or to a file that user
// may not read. Every ELF file this package opens, and every file the stack
// table opens on a traced process's behalf, is opened by OpenRegular (or
// OpenInRoot): the path is looked up with O_PATH, which opens nothing, the
// descriptor's fstat must show a regular file, and only that inode is then
// opened for reading (O_RDONLY|O_NONBLOCK|O_CLOEXEC|O_NOCTTY) and checked
// again. A FIFO, device, socket or directory is never opened for reading,
// so nothing waits on one, and the file read is the file checked.
//
// Which links are followed depends on who controls the path:
//
//   - A path the user named (a probe's binary, a library found in the
//     ld.so cache) follows every link, as any tool would.
//   - The kernel's own links to a process's files (/proc/PID/map_files,
//     /proc/self/fd) are followed: they lead to the very file mapped.
//   - Debug-file candidates next to the binary (DIR/NAME and
//     DIR/.debug/NAME for a .gnu_debuglink NAME, DIR being the binary's
//     real directory) follow no link anywhere on the path (openat2's
//     RESOLVE_NO_SYMLINKS): whoever may write that directory must not
//     steer root to another file. A debuglink naming a symbolic link finds
//     nothing there.
//   - Candidates in the debug directories (--debug-dir,
//     $BPFTAPE_DEBUG_DIRS, /usr/lib/debug) follow symbolic links but not
//     /proc's magic links: those directories are the administrator's, and
//     distributions build them with links (Fedora's .build-id entries are
//     links into /usr/lib/debug; Debian's are regular files).
//   - The stack table opens a mapped file through /proc/PID/map_files;
//     failing that, by the path /proc/PID/maps prints, inside the
//     process's root (OpenInRoot: RESOLVE_IN_ROOT) and then in this mount
//     namespace, with no link followed: the kernel prints mapped paths
//     resolved, so a link there means the path has changed since.
//
// Without openat2 (before Linux 5.6), only a link as the last component is
// refused (O_NOFOLLOW). A debug file found by its .gnu_debuglink is read
// whole for its CRC32, so one larger than MaxDebugFileSize is rejected.
// Reading a file can still be slow (a huge binary, a network or FUSE file
// system): the stack table bounds how long it waits for a read (see
// package stacktable).
package elfsym
