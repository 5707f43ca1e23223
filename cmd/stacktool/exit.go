package main

import (
	"errors"
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/layercast/layercast/experiment"
)

// Exit codes, the same for every command (DESIGN.md, stacktool).
const (
	exitOK     = 0 // every promise kept
	exitBroken = 1 // a promise broken (the output says which), or the run failed
	exitInput  = 2 // bad input: flags, specs, scenarios, files
)

// exitError is an error that carries its exit code.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// ExitCode makes exitError a cli.ExitCoder.
func (e *exitError) ExitCode() int { return e.code }

// brokenf is the error of a command whose stack broke a promise (exit 1).
func brokenf(format string, args ...any) error {
	return &exitError{code: exitBroken, err: fmt.Errorf(format, args...)}
}

// exitCode maps an error returned by a command to the process's exit code:
// what says its code keeps it, a failed run is 1, everything else is bad
// input, 2.
func exitCode(err error) int {
	if err == nil {
		return exitOK
	}
	var ec cli.ExitCoder
	if errors.As(err, &ec) && ec.ExitCode() != 0 {
		return ec.ExitCode()
	}
	if errors.Is(err, experiment.ErrRunFailed) {
		return exitBroken
	}
	return exitInput
}
