// Package sideband reads the kernel's perf side-band records of every
// process on the host: the executable mappings each one makes
// (PERF_RECORD_MMAP2), its execs (PERF_RECORD_COMM marked
// PERF_RECORD_MISC_COMM_EXEC), the processes it forks and its exit, each
// stamped with the boot clock, as the capture's events are. It opens, per
// CPU, a dummy software event that counts nothing and only carries these
// records (as perf record does), maps its ring, and parses the records
// itself.
//
// The decision, and its reason: the stack table read a process's mappings
// from /proc/PID/maps once the drain loop met its first event, and a
// process that exits within a millisecond of that event was gone by then,
// its stacks never symbolized; an exec into a binary at the same
// addresses kept the old image's mappings. The kernel writes these
// records as the mappings are made, before the stacks that need them, so
// the mappings of a process are known whenever it exits or execs. Reading
// /proc stays the first source (its map_files open the very file mapped);
// these records fill in what it can no longer give.
//
// Only executable mappings are asked for (not mmap_data), and the rings
// are bounded: a record the kernel could not write for want of room is
// counted (Record.Lost), never waited for.
package sideband
