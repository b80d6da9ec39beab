package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/bpftape/bpftape/internal/outfile"
	"github.com/bpftape/bpftape/internal/usage"
)

// output is a verb's -o and --force, checked and written by the rules of
// package outfile: a temporary file renamed into place on success, no
// existing file replaced without --force, no input overwritten, devices
// and FIFOs written in place and never removed, symbolic links not
// followed, mode 0600.
type output struct {
	path  *string
	force *bool
	// stdout: "" and "-" mean standard output.
	stdout bool
}

// outputFlags registers -o (help as given) and --force.
func outputFlags(fs *flag.FlagSet, help string, stdout bool) *output {
	return &output{
		path:   fs.String("o", "", help),
		force:  fs.Bool("force", false, "replace the -o file if it exists"),
		stdout: stdout,
	}
}

func (o *output) toStdout() bool { return o.stdout && (*o.path == "" || *o.path == "-") }

func (o *output) options(inputs ...string) outfile.Options {
	return outfile.Options{Force: *o.force, Inputs: inputs}
}

// check refuses the output before any work: it exists, is an input, or is a
// symbolic link.
func (o *output) check(inputs ...string) error {
	if o.toStdout() {
		return nil
	}
	_, err := outfile.Check(*o.path, o.options(inputs...))
	return err
}

// write runs fn on the output (buffered), or on stdout, and puts the
// output in place only if fn and the writing succeed.
func (o *output) write(stdout io.Writer, inputs []string, fn func(w io.Writer) error) error {
	if o.toStdout() {
		return fn(stdout)
	}
	return writeFile(*o.path, o.options(inputs...), fn)
}

// writeFile runs fn on a new output file at path, committed only if fn
// and the writing succeed.
func writeFile(path string, opts outfile.Options, fn func(w io.Writer) error) error {
	f, err := outfile.Create(path, opts)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(f, 1<<16)
	err = fn(bw)
	if err == nil {
		err = bw.Flush()
	}
	if err != nil {
		f.Discard()
		var pe *os.PathError
		if errors.As(err, &pe) || usage.Is(err) {
			return err // names the file, or is about the arguments
		}
		return fmt.Errorf("write %s: %w", path, err)
	}
	return f.Commit()
}
