// Command rekey moves rows from Cassandra, Kafka and files into Lindorm wide tables, rewriting
// each row's primary key so that the range-partitioned target does not hotspot.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"strconv"

	"github.com/rekey/rekey/sink/store"
	"github.com/rekey/rekey/sink/store/s3store"
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

type globalFlags struct {
	logLevel  string
	logFormat string
}

func main() {
	// REKEY_CPUPROFILE=FILE writes a CPU profile of the whole command (for `go tool pprof`).
	if path := os.Getenv("REKEY_CPUPROFILE"); path != "" {
		if f, err := os.Create(path); err == nil {
			pprof.StartCPUProfile(f)
			code := run(os.Args[1:])
			pprof.StopCPUProfile()
			f.Close()
			os.Exit(code)
		}
	}
	os.Exit(run(os.Args[1:]))
}

// registerStores wires the object stores --out may name (store.Open): S3 and OSS (through its
// S3-compatible API), both by sink/store/s3store.
func registerStores() {
	store.Register("s3", s3store.Opener)
	store.Register("oss", s3store.Opener)
}

func run(args []string) int {
	registerStores()
	g := &globalFlags{}
	ran := false
	root := newRootCmd(g, &ran)
	root.SetArgs(args)
	cmd, err := root.ExecuteC()
	if err == nil {
		return 0
	}
	code := exitCode(cmd, err, ran)
	printFinalError(os.Stderr, g.logFormat, err, code)
	return code
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
func (g *globalFlags) logger() (*zap.Logger, error) {
	level, err := zapcore.ParseLevel(g.logLevel)
	if err != nil {
		return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", g.logLevel)
	}
	var cfg zap.Config
	switch g.logFormat {
	case "json":
		cfg = zap.NewProductionConfig()
	case "console":
		cfg = zap.NewDevelopmentConfig()
		cfg.DisableStacktrace = true
		cfg.EncoderConfig.EncodeLevel = zapcore.CapitalLevelEncoder
		if term.IsTerminal(int(os.Stderr.Fd())) { // colour codes only where a terminal renders them
			cfg.EncoderConfig.EncodeLevel = zapcore.CapitalColorLevelEncoder
		}
	default:
		return nil, fmt.Errorf("--log-format %q: want console or json", g.logFormat)
	}
	cfg.Level = zap.NewAtomicLevelAt(level)
	cfg.OutputPaths = []string{"stderr"}
	cfg.ErrorOutputPaths = []string{"stderr"}
	return cfg.Build()
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
