package record

import (
	"errors"
	"io/fs"
	"os"
)

// checkOutput refuses to overwrite an existing regular file unless force,
// before anything is started or attached. It returns whether the capture
// must be created exclusively (it did not exist and must not appear
// meanwhile). Pipes and devices are written to as they are.
func checkOutput(path string, force bool) (exclusive bool, err error) {
	st, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return !force, nil
	case err != nil:
		return false, nil // format.Create says why it cannot open it
	case st.IsDir():
		return false, usagef("output: %s is a directory", path)
	case st.Mode().IsRegular() && !force:
		return false, usagef("output: %s exists: give --force to overwrite it, or another -o", path)
	}
	return false, nil
}
