// Package stacktable builds, at record time, a capture's stack table
// (format.StackTable): what replay needs to turn the stack ids of the
// UserStack and KernelStack columns into function names later, on another
// machine, after the processes and their binaries are gone. The recorder
// hands every stack to a Collector (Add) and writes what it gathered with
// the next batch (Take, format.Writer.AddStacks).
//
// # What goes in
//
// Each unique stack once, by its id (format.StackID: a hash of its
// frames). For a user stack, the executable mappings of its process that
// its frames fall in (read from /proc/PID/maps), the objects mapped there
// (path and build id) and, of each object's function symbols, only those
// that some frame falls in. A binary's full symbol table would make every
// capture carry megabytes per library; the symbols that frames hit are
// what replay needs, and they are read while the binary is still there.
// For a kernel stack, the kallsyms functions that its frames fall in, of
// the object "[kernel]" (with the build id of /sys/kernel/notes) or
// "[MODULE]".
//
// Every frame but the innermost is a return address, which replay looks
// up one byte earlier (the call may be the last instruction of its
// function, as perf does): the symbols of both the address and the byte
// before it are stored. A function symbol of size 0 (assembly) covers up to
// the next symbol of its object; since replay sees only the stored
// symbols, it is stored with that distance as its size.
//
// Objects get ids 1, 2, ... in the order they enter the table. An object
// without any function symbol says why in Object.NoSymbols ("stripped,
// and no debug file in /usr/lib/debug (build id ...)"); a process whose
// mappings could be read neither from /proc nor from the side-band gets
// a ProcessNote, once.
//
// # Where symbols come from
//
// A mapped file is opened through /proc/PID/map_files/START-END (then
// PATH inside /proc/PID/root, then PATH, following no link: see package
// elfsym): that link reaches the very file the process mapped even when
// its path has since been deleted, replaced by a new build, or lives in
// another mount namespace (a container). Every file opened on a traced
// process's behalf, debug files included, is opened by
// elfsym.OpenRegular, which opens nothing but a regular file for reading:
// a .gnu_debuglink naming a FIFO, a device or a link to one, next to a
// binary its user owns, is refused without being opened. The opened
// file is kept open (up to maxOpenFiles of them; past that it is opened
// again by the same paths, if it is still the same file) until a frame
// needs its symbols: they are read even after the process has exited, and
// only for the objects that frames fall in. Objects are cached by build id
// and by file (device, inode, size, mtime), so each is opened and its
// symbols read once however many processes map it. Symbols come from
// .symtab and .dynsym; a binary without .symtab (stripped) has its
// separate debug file looked for by build id and .gnu_debuglink in
// Options.DebugDirs (elfsym.FindDebugFile, as gdb does). Symbols are read
// by address rather than through elfsym.Functions, which keeps one
// function per name (static functions of one name in several files would
// be lost) for listings. Among aliases of one address, the name is chosen
// as perf does (see better). The [vdso] is read from the process's memory,
// once per image.
//
// # When maps are read
//
// On a process's first stack, or earlier when the recorder calls Snapshot
// on its first event or Exec when its comm changes; then again when a
// frame falls outside every mapping known for it (a dlopen): the mappings
// that are new or changed go in with Since = the time of that stack, the
// unchanged ones keep theirs. Mappings enter the table when a frame first
// falls in them. Anonymous executable memory (JIT code) is remembered
// without an object, so its frames, unresolved, cause no re-read; garbage
// frames can cause at most maxFruitless re-reads in a row that find
// nothing new, then one per rereadBackoff.
//
// A process that exits within a millisecond of its last event is gone by
// the time the drain loop meets that event, and /proc/PID/maps with it.
// So the recorder also gives the Collector the kernel's perf side-band
// records (UseSideband, package record/sideband): every executable mmap,
// exec, fork and exit on the host, stamped with the boot clock, written
// as they happen, hence before the stacks that need them. The Collector
// reads them before it resolves a new stack (and in Sync, as the recorder
// drains) and keeps, per process, the executable mappings of each image:
// an exec starts one with nothing, at the exec's time; a fork starts one
// with the parent's mappings (those read from /proc too); later mmaps add
// to the image of their time. A process has images (at most maxImages,
// kept newest first), and a stack is resolved in the image of its time:
// /proc/PID/maps is read for the newest image only (and thrown away when
// the side-band then tells of an exec that may have come before the
// read); an image whose process has exited, or exec'd since, takes its
// mappings from the side-band, with Since = the time of each mmap (the
// exec's, for /proc's first read of an exec'd image). Such a mapping's
// file is opened as any other (map_files, the path in /proc/PID/root, the
// path), and each must be the file mapped, else the next is tried: the
// record's build id (Linux 5.12; PERF_RECORD_MISC_MMAP_BUILD_ID) or else
// its inode, not the device, which stat gives otherwise than the kernel
// on btrfs and overlayfs. A [vdso] of an exited process is this
// process's own, when it is of the same size (the kernel gives one image
// per ABI). Without a side-band (the kernel or perf_event_paranoid refused
// it), or once it dropped records, an Exec whose read finds other
// mappings starts a new image at its own time.
//
// # Cost and limits
//
// Add of a stack already seen in the same process image (any process,
// for a kernel stack) is a hash of its frames and two map lookups, with no
// allocation; a new stack first reads the side-band (a look at each CPU's
// ring when it is empty). A stack id names frames, not a process, and replay resolves
// user frames with the mappings of the event's pid: so the same frames in
// another process (forked workers, a non-PIE program run twice) are
// resolved again for that process (its mappings go in; the stack and the
// symbols already there do not).
//
// Memory: each process keeps a cache of the frame addresses already
// resolved (maxAddrsPerPID entries, emptied when full; maxAddrs over all
// processes and the kernel); a process that has exited and had no stack
// for forgetAfter is forgotten once more than minSweep processes are
// known. The set of stacks seen (by process) and the table itself grow
// with the number of unique stacks, stored objects and hit symbols: that
// is the capture's content. The symbols of an object are kept from the
// first frame that falls in it to the end (kallsyms: from the first
// kernel stack, or from ReadKernelSymbols).
//
// Time: the Collector runs in the recorder's drain loop, so whatever it
// reads for a new stack stalls the draining while the rings fill. So
// kallsyms, the largest read, is read while the programs load
// (ReadKernelSymbols) rather than at the first kernel stack, which lost
// events under load; the first stack of a new binary still reads its ELF
// symbols in the loop. The measurements are in bench/README.md ("The stack
// table while recording").
//
// What is read of a traced process (its maps, its [vdso], each mapped
// file's headers and symbols, its debug file) may take much longer, or
// never end: a file on a network or FUSE file system that the traced user
// controls. Each such read runs on a goroutine of its own and the drain
// loop waits for it at most readBudget (1 s); one that overruns is left
// to finish on its own, its result thrown away, and its object or process
// says so in the table (NoSymbols, ProcessNote). After maxOverruns (3)
// overruns no more reads are made, so that a hostile process can stall
// the drain for a few seconds in all, not for every file it maps. When
// the recording ends, Hurry gives what is still to be read EndBudget
// (500 ms) in all: the footer never waits for a read. The alternative, a
// queue of reads off the drain loop, would have put the symbols of a
// stack into a later batch's part of the table than the stack: a capture
// cut short would lose them. A symbol table larger than maxSymbolBytes
// (256 MB, with its strings) is not read.
//
// A stack of more than format.MaxFrames frames is stored truncated (its id
// stays the hash of all of them).
//
// The side-band tells of every process on the host, traced or not: the
// Collector keeps what it told of at most maxSBProcs processes (a quarter
// forgotten at a time: those that exited more than forgetAfter ago first,
// then the running ones quiet longest, whose /proc can still be read,
// then those that exited lately), at most maxSBMaps mappings an image and
// maxImages images a process. The kernel drops records when a ring (128
// KB a CPU) fills between two reads, and counts them (Stats.SidebandLost).
//
// Limits: without the side-band, a pid reused by a new process is taken
// for the old one until a frame falls outside the old mappings; maps are
// read again only for a frame outside every known mapping or a comm change,
// so an exec that keeps the comm, into a binary laid out at the same
// addresses, keeps the first image's mappings; and a short-lived process
// gets a ProcessNote when it exited before its mappings were read. With
// it, a stack already seen in a process is not resolved again for a new
// image until the side-band has been read (a new stack, a comm change, or
// every drain cycle), so an exec keeping comm and layout can still take a
// stack in the new image for one of the old for up to a drain cycle; the
// stacks before the first exec the side-band saw, in a process not read
// before it, have no mappings ("exec'd before its mappings were read").
// Code that is only anonymous memory (JIT, text remapped onto huge pages)
// does not resolve. kallsyms is read once, so BPF programs and modules
// loaded afterwards do not resolve. Frames may be any values (0, kernel
// addresses in a user stack, garbage): they resolve to nothing, never to
// a panic.
package stacktable
