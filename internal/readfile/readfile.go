// Package readfile reads a file the user named (a spec, a scenario) with
// one error that names the file once.
package readfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// Read returns the contents of path. Its error is one line, "cannot read
// WHAT file PATH: CAUSE", where CAUSE is the system's reason without the
// "open PATH: " it would otherwise repeat.
func Read(what, path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, fmt.Errorf("cannot read %s file %s: %v", what, path, err)
	}
	return data, nil
}
