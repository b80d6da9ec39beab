package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"strconv"
	"strings"
	"syscall"
)

// writeHint says what a write error that stopped a recording left behind:
// the capture keeps its complete batches, which readers recover.
func writeHint(err error, output string) error {
	var why string
	switch {
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		why = "the disk is full"
	case errors.Is(err, syscall.EFBIG):
		why = "the file reached the size limit"
	case errors.Is(err, syscall.EIO), errors.Is(err, syscall.EROFS):
		why = "the disk failed"
	default:
		return err
	}
	return fmt.Errorf("%w\n(%s: the recording stopped there; %s keeps its complete batches, which bpftape reads, and 'bpftape repair %s FIXED' copies them to a standard Arrow file elsewhere)",
		err, why, output, output)
}

// readHint says, for a verb that reads captures, why a capture it could
// not open for want of permission cannot be read, and what to do:
// recordings run as root, and their captures are readable by their owner
// only. Any other error is returned as it is.
func readHint(verb string, err error) error {
	if verb == "record" || verb == "list" || verb == "doctor" { // they read no capture
		return err
	}
	var pe *fs.PathError
	if !errors.As(err, &pe) || pe.Op != "open" || !(errors.Is(pe.Err, syscall.EACCES) || errors.Is(pe.Err, syscall.EPERM)) {
		return err
	}
	st, serr := os.Stat(pe.Path)
	if serr != nil || !st.Mode().IsRegular() {
		return err // a folder on the way is closed: the error says enough
	}
	uid, gid, ok := fileOwner(st)
	if !ok {
		return err
	}
	owner := userName(uid)
	mode := fmt.Sprintf("mode %04o", st.Mode().Perm())
	if st.Mode().Perm()&0o077 == 0 {
		mode = "owner-only, " + mode
	}
	readers := owner
	if st.Mode().Perm()&0o040 != 0 {
		group := groupName(gid)
		mode += ", readable by group " + group
		readers += " or a member of " + group
	}
	me := userName(os.Geteuid())
	return fmt.Errorf("%w (the file is %s, owned by %s: read it as %s, or record with --owner %s, or run 'sudo chown %s %s')",
		err, mode, owner, readers, me, me, shellQuote(pe.Path))
}

// userName is the name of user uid, or the number if it has none.
func userName(uid int) string {
	if u, err := user.LookupId(strconv.Itoa(uid)); err == nil {
		return u.Username
	}
	return strconv.Itoa(uid)
}

// groupName is the name of group gid, or the number if it has none.
func groupName(gid int) string {
	if g, err := user.LookupGroupId(strconv.Itoa(gid)); err == nil {
		return g.Name
	}
	return strconv.Itoa(gid)
}

// shellQuote quotes s for a POSIX shell, unless it needs no quotes.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./+,:@%=") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
