// Package app turns pkg/approver into the stackward-approver command: its
// flags, logging, the explain subcommand and the exit codes.
//
// It lives here rather than in main, as stackward-ccm's lives in
// pkg/provider/app, so that main stays a few lines and tests drive the very
// command that ships: main calls Run with os.Args, a test calls Run with its
// own arguments.
package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/pflag"
	"k8s.io/klog/v2"

	"github.com/stackward/stackward/pkg/approver"
	"github.com/stackward/stackward/pkg/version"
)

// Options are what a caller decides beyond the command line.
type Options struct {
	// Stdout receives --version and explain's output; nil means os.Stdout.
	Stdout io.Writer
	// Stderr receives usage and argument errors; nil means os.Stderr.
	Stderr io.Writer
}

// ExitError is a failure Run has already reported (on Stderr or in the
// log), with the process exit code it calls for: 2 for a bad command line,
// 1 for a failure while running.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string { return e.Err.Error() }
func (e *ExitError) Unwrap() error { return e.Err }

// ExitCode is the process exit code for Run's result: 0 for nil, the
// ExitError's code, else 1.
func ExitCode(err error) int {
	if err == nil {
		return 0
	}
	var e *ExitError
	if errors.As(err, &e) {
		return e.Code
	}
	return 1
}

// Run runs stackward-approver with args (without the program name) until
// ctx is done. With "explain <csr>" as args it prints what would be decided
// for one CSR and returns. --help and --version return nil. Every error it
// returns is an *ExitError it has already reported, so main only exits with
// ExitCode(err).
func Run(ctx context.Context, args []string, opts Options) error {
	stdout, stderr := opts.Stdout, opts.Stderr
	if stdout == nil {
		stdout = os.Stdout
	}
	if stderr == nil {
		stderr = os.Stderr
	}
	explain := len(args) > 0 && args[0] == "explain"
	if explain {
		args = args[1:]
	}
	f := newFlags()
	fs, cfg := f.fs, f.cfg
	fs.SetOutput(stderr)
	printVersion := fs.Bool("version", false, "Print the version (the image's org.opencontainers.image.version) and exit.")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return nil
		}
		return &ExitError{Code: 2, Err: err}
	}
	if *printVersion {
		fmt.Fprintf(stdout, "stackward-approver %s\n", version.Version)
		return nil
	}
	if err := f.applyLogging(nil); err != nil {
		fmt.Fprintln(stderr, err)
		return &ExitError{Code: 2, Err: err}
	}
	logger := klog.Background().WithName("stackward-approver")
	ctx = klog.NewContext(ctx, logger)
	defer klog.Flush()

	if explain {
		if fs.NArg() != 1 {
			err := errors.New("usage: stackward-approver explain [flags] <csr-name>")
			fmt.Fprintln(stderr, err)
			return &ExitError{Code: 2, Err: err}
		}
		if err := approver.Explain(ctx, *cfg, fs.Arg(0), stdout); err != nil {
			fmt.Fprintln(stderr, "explain:", err)
			return &ExitError{Code: 1, Err: fmt.Errorf("explain: %w", err)}
		}
		return nil
	}
	if fs.NArg() != 0 {
		err := fmt.Errorf("unexpected arguments %q (the only subcommand is explain)", fs.Args())
		fmt.Fprintln(stderr, err)
		return &ExitError{Code: 2, Err: err}
	}
	logger.Info("Starting", "version", version.Version)
	if err := approver.Run(ctx, *cfg); err != nil {
		logger.Error(err, "Exiting")
		return &ExitError{Code: 1, Err: err}
	}
	logger.Info("Stopped")
	return nil
}
