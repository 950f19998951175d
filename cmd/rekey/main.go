// Command rekey moves rows from Cassandra, Kafka and files into Lindorm wide tables, rewriting
// each row's primary key so that the range-partitioned target does not hotspot.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"strconv"
	"time"

	"github.com/rekey/rekey/sink/store"
	"github.com/rekey/rekey/sink/store/s3store"
	"github.com/rekey/rekey/source/cassandra"
	"github.com/spf13/cobra"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"golang.org/x/term"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// exitError carries a process exit code through cobra.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func exitWith(code int, err error) error { return &exitError{code: code, err: err} }

// Exit codes of migrate and replicate, as DSBulk users know them.
const (
	exitRejects     = 1   // completed, but some rows were rejected
	exitUsage       = 2   // invalid use: flags, mapping, a refused resume
	exitFailed      = 3   // the run failed: source or sink error, damaged input, too many rejects
	exitInterrupted = 130 // stopped by Ctrl-C or SIGTERM; --resume finishes
)

// invocation is one run of the command line: what it reads and writes outside its flags (the
// process's streams and environment in main, buffers in tests), the flags every command shares,
// and what one step of a command hands to the next. Nothing of it outlives run, so that runs
// in one process (the tests) share no state.
type invocation struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	getenv         func(string) string

	logLevel  string
	logFormat string
	// ran is set once cobra has accepted the flags and arguments and the command starts
	ran bool

	// the source flags of the command that runs (every command binds its own to these)
	cassandra cassandraFlags
	file      fileFlags
	// openedCassandra keeps the Cassandra source loadProgramFor connected (to read the table's
	// schema) for the openSource call that follows, by URI
	openedCassandra map[string]*cassandra.Source
}

func main() {
	args := os.Args[1:]
	// REKEY_CPUPROFILE=FILE writes a CPU profile of the whole command (for `go tool pprof`).
	if path := os.Getenv("REKEY_CPUPROFILE"); path != "" {
		if f, err := os.Create(path); err == nil {
			pprof.StartCPUProfile(f)
			code := run(context.Background(), args, os.Stdin, os.Stdout, os.Stderr, os.Getenv)
			pprof.StopCPUProfile()
			f.Close()
			os.Exit(code)
		}
	}
	os.Exit(run(context.Background(), args, os.Stdin, os.Stdout, os.Stderr, os.Getenv))
}

// registerStores wires the object stores --out may name (store.Open): S3 and OSS (through its
// S3-compatible API), both by sink/store/s3store.
func registerStores() {
	store.Register("s3", s3store.Opener)
	store.Register("oss", s3store.Opener)
}

// run is rekey's one entry: it runs the command line args with the given streams and
// environment and returns the process's exit code.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	registerStores()
	inv := &invocation{stdin: stdin, stdout: stdout, stderr: stderr, getenv: getenv}
	root := newRootCmd(inv)
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return 0
	}
	code := exitCode(cmd, err, inv.ran)
	printFinalError(stderr, inv.logFormat, err, code)
	return code
}

// isTerminal tells whether w is a terminal (colours, progress bars, a prompt on stdin).
func isTerminal(w any) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// printFinalError writes the error that ends the process: a plain "rekey: ..." line, or with
// --log-format json one JSON log line (level, msg, exit_code), so a log pipeline that reads
// rekey's JSON logs also gets the line that says why it stopped.
func printFinalError(w io.Writer, format string, err error, code int) {
	if format != "json" {
		fmt.Fprintln(w, "rekey:", escapeLines(err.Error()))
		return
	}
	enc := zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig())
	core := zapcore.NewCore(enc, zapcore.AddSync(w), zapcore.ErrorLevel)
	zap.New(core).Error(err.Error(), zap.Int("exit_code", code))
}

// exitCode is the one place an error becomes the process's exit code. A command chooses its
// code with exitWith; any other error is a failure (3) when the command ran, and invalid use
// when cobra refused the flags or arguments before it ran. Never 1: that code means "completed,
// but some rows were rejected" (migrate) or "warnings" (report --strict), which only exitWith
// gives, so that automation never reads a failed run as a finished one.
func exitCode(cmd *cobra.Command, err error, ran bool) int {
	var ee *exitError
	switch {
	case errors.As(err, &ee):
		return ee.code
	case ran:
		return exitFailed
	case cmd != nil && cmd.Name() == "verify":
		return exitVerifyFailed // verify's 2 means "the target differs"
	}
	return exitUsage
}

// logger builds the one zap logger of the process; components get Named children of it.
func (inv *invocation) logger() (*zap.Logger, error) {
	level, err := zapcore.ParseLevel(inv.logLevel)
	if err != nil {
		return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", inv.logLevel)
	}
	var cfg zap.Config
	switch inv.logFormat {
	case "json":
		cfg = zap.NewProductionConfig()
	case "console":
		cfg = zap.NewDevelopmentConfig()
		cfg.DisableStacktrace = true
		cfg.EncoderConfig.EncodeLevel = zapcore.CapitalLevelEncoder
		if isTerminal(inv.stderr) { // colour codes only where a terminal renders them
			cfg.EncoderConfig.EncodeLevel = zapcore.CapitalColorLevelEncoder
		}
	default:
		return nil, fmt.Errorf("--log-format %q: want console or json", inv.logFormat)
	}
	cfg.Level = zap.NewAtomicLevelAt(level)
	// the logs go to the invocation's stderr: zap's own sinks could only name the process's
	w := zapcore.Lock(zapcore.AddSync(inv.stderr))
	enc := zapcore.NewConsoleEncoder(cfg.EncoderConfig)
	if cfg.Encoding == "json" {
		enc = zapcore.NewJSONEncoder(cfg.EncoderConfig)
	}
	core := zapcore.NewCore(enc, w, cfg.Level)
	if s := cfg.Sampling; s != nil {
		core = zapcore.NewSamplerWithOptions(core, time.Second, s.Initial, s.Thereafter)
	}
	opts := []zap.Option{zap.ErrorOutput(w), zap.AddCaller()}
	if cfg.Development {
		opts = append(opts, zap.Development())
	}
	if !cfg.DisableStacktrace {
		opts = append(opts, zap.AddStacktrace(zapcore.ErrorLevel))
	}
	return zap.New(core, opts...), nil
}

// checkCommonFlags refuses values of flags several commands share that would otherwise be
// silently replaced: --regions 0 would quietly mean "the mapping's count".
func checkCommonFlags(cmd *cobra.Command, _ []string) error {
	if f := cmd.Flags().Lookup("regions"); f != nil && f.Changed {
		if n, err := strconv.Atoi(f.Value.String()); err != nil || n < 1 {
			return exitWith(2, fmt.Errorf("--regions %s: want at least 1 region (leave --regions out to use the mapping's regions: section)", f.Value))
		}
	}
	return nil
}
