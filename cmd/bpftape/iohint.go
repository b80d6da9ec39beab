package main

import (
	"errors"
	"fmt"
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
