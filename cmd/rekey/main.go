// Command rekey moves rows from Cassandra, Kafka and files into Lindorm wide tables, rewriting
// each row's primary key so that the range-partitioned target does not hotspot.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	"github.com/rekey/rekey/replicate"
	"github.com/rekey/rekey/sink/sqlsink"
	"github.com/rekey/rekey/source"
	"github.com/rekey/rekey/source/sourceuri"
	"github.com/rekey/rekey/store"
	"github.com/rekey/rekey/store/s3store"
	"github.com/rekey/rekey/transform"
	"github.com/spf13/cobra"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"golang.org/x/term"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// outcome is what an error that ends a command says about the run. Commands return it in an
// outcomeError (usageError, runFailed, ...); exitCode alone maps it to the command's exit code.
type outcome int

const (
	outcomeFailed         outcome = iota // the run failed; any error without an outcome, once the command ran
	outcomeUsage                         // invalid use: flags, mapping, a refused resume
	outcomeInterrupted                   // stopped by Ctrl-C or SIGTERM
	outcomeRejects                       // migrate completed, but some rows were rejected
	outcomeReportWarnings                // report --strict completed and found warnings
	outcomeReportErrors                  // report completed and found errors
	outcomeTargetDiffers                 // verify completed: the target does not hold what the source gives
)

// outcomeError carries an outcome through cobra.
type outcomeError struct {
	outcome outcome
	err     error
}

func (e *outcomeError) Error() string { return e.err.Error() }
func (e *outcomeError) Unwrap() error { return e.err }

func usageError(err error) error           { return &outcomeError{outcomeUsage, err} }
func runFailed(err error) error            { return &outcomeError{outcomeFailed, err} }
func interrupted(err error) error          { return &outcomeError{outcomeInterrupted, err} }
func completedWithRejects(err error) error { return &outcomeError{outcomeRejects, err} }
func reportWarnings(err error) error       { return &outcomeError{outcomeReportWarnings, err} }
func reportErrors(err error) error         { return &outcomeError{outcomeReportErrors, err} }
func targetDiffers(err error) error        { return &outcomeError{outcomeTargetDiffers, err} }

// Exit codes of migrate, replicate, merge, check, ddl and gen, as DSBulk users know them; report
// and verify add their own (below, and in verify.go).
const (
	exitRejects     = 1   // completed, but some rows were rejected
	exitUsage       = 2   // invalid use: flags, mapping, a refused resume
	exitFailed      = 3   // the run failed: source or sink error, damaged input, too many rejects
	exitInterrupted = 130 // stopped by Ctrl-C or SIGTERM; --resume finishes
)

// Exit codes of report (its verdict), besides exitUsage, exitFailed and exitInterrupted.
const (
	exitReportWarnings = 1 // --strict: the report found warnings
	exitReportErrors   = 2 // the report found errors
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
	// args is the command line as run was given it (refuseRepeatedFlags reads it again)
	args []string
	// ran is set once cobra has accepted the flags and arguments and the command starts
	ran bool

	// the kinds of source --source reads, their flags bound to the command that runs
	sources *source.Set
	// sourceWriteTimes asks the source for each row's write time (report: the write order)
	sourceWriteTimes bool
	// sourceCellTimes asks the source for each cell's write time (a mapping's target.write_time)
	sourceCellTimes bool
	// sourceShards: the command takes --shard and writes a shard's output for it (migrate)
	sourceShards bool
	// sourceMemory is the command's --memory budget, which bounds what the source may hold (a
	// file's record); 0 when the command has none
	sourceMemory int64
	// opened keeps the source loadProgramFor opened (to read its schema) for the openSource call
	// that follows, by URI
	opened map[string]source.SchemaSource

	// Test seams, nil in main. signals replaces the process's Ctrl-C and SIGTERM, so that a test
	// interrupts its own run (and runs in parallel with others); wrapOut wraps the store --out
	// opens, so that a test meets a run at a chosen point (a checkpoint saved) instead of a time.
	// replicateHooks are the replicator's fault hooks (a process that kills itself at a step).
	signals        <-chan os.Signal
	wrapOut        func(store.Store) store.Store
	replicateHooks replicate.Hooks
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
	// REKEY_MEMPROFILE=FILE writes what the whole command allocated (`go tool pprof -sample_index=alloc_space`),
	// and FILE.peak the live heap when it was largest (-sample_index=inuse_space).
	if path := os.Getenv("REKEY_MEMPROFILE"); path != "" {
		runtime.MemProfileRate = 64 << 10
		stop := watchPeakHeap(path + ".peak")
		code := run(context.Background(), args, os.Stdin, os.Stdout, os.Stderr, os.Getenv)
		stop()
		if f, err := os.Create(path); err == nil {
			pprof.Lookup("allocs").WriteTo(f, 0)
			f.Close()
		}
		os.Exit(code)
	}
	os.Exit(run(context.Background(), args, os.Stdin, os.Stdout, os.Stderr, os.Getenv))
}

// registerStores wires the object stores --out may name (store.Open): S3 and OSS (through its
// S3-compatible API), both by store/s3store.
func registerStores() {
	store.Register("s3", s3store.Opener)
	store.Register("oss", s3store.Opener)
}

// run is rekey's one entry: it runs the command line args with the given streams and
// environment and returns the process's exit code.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	return (&invocation{stdin: stdin, stdout: stdout, stderr: stderr, getenv: getenv}).run(ctx, args)
}

// run runs the command line args with the invocation's streams, environment and seams.
func (inv *invocation) run(ctx context.Context, args []string) int {
	stdin, stdout, stderr := inv.stdin, inv.stdout, inv.stderr
	registerStores()
	inv.args = args
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

// exitCode is the one place an error becomes the process's exit code. A command says what
// happened with an outcomeError; any other error is a failure when the command ran, and invalid
// use when cobra refused the flags or arguments before it ran.
func exitCode(cmd *cobra.Command, err error, ran bool) int {
	o := outcomeFailed
	var oe *outcomeError
	switch {
	case errors.As(err, &oe):
		o = oe.outcome
	case !ran:
		o = outcomeUsage
	}
	name := ""
	if cmd != nil {
		name = cmd.Name()
	}
	return commandExitCode(name, o)
}

// commandExitCode is the exit code of a command's outcome. Never 1 but for a completed run: 1
// means "completed, but some rows were rejected" (migrate) or "warnings" (report --strict), so
// that automation never reads a failed run as a finished one.
func commandExitCode(command string, o outcome) int {
	switch o {
	case outcomeInterrupted:
		return exitInterrupted
	case outcomeRejects:
		return exitRejects
	case outcomeReportWarnings:
		return exitReportWarnings
	case outcomeReportErrors:
		return exitReportErrors
	case outcomeTargetDiffers:
		return exitDifferent
	}
	if command == "verify" {
		return exitVerifyFailed // verify's 2 means "the target differs": it could not run
	}
	if o == outcomeUsage {
		return exitUsage
	}
	return exitFailed
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
// silently replaced: --regions 0 would quietly mean "the mapping's count", --progress-interval 0
// the default 10s, --time-slice 0 the default 24h, --workers 0 one per CPU, --max-file-size 0
// the default 256MiB, --checkpoint-interval 0 no checkpoint before the end.
func checkCommonFlags(cmd *cobra.Command, _ []string) error {
	if f := cmd.Flags().Lookup("regions"); f != nil && f.Changed {
		if n, err := strconv.Atoi(f.Value.String()); err != nil || n < 1 {
			return usageError(fmt.Errorf("--regions %s: want at least 1 region (leave --regions out to use the mapping's regions: section)", f.Value))
		}
	}
	if f := cmd.Flags().Lookup("workers"); f != nil && f.Changed {
		if n, err := strconv.Atoi(f.Value.String()); err != nil || n < 1 {
			return usageError(fmt.Errorf("--workers %s: want at least 1 (leave --workers out for one per CPU)", f.Value))
		}
	}
	if f := cmd.Flags().Lookup("max-file-size"); f != nil && f.Changed {
		if n, err := transform.ParseSize(f.Value.String()); err == nil && n == 0 {
			return usageError(fmt.Errorf("--max-file-size %s: want a positive size (256MiB), or leave --max-file-size out for the default", f.Value))
		}
	}
	// --time-slice 0 would quietly mean "no --time-slice": the default width, or nothing at all
	if f := cmd.Flags().Lookup("time-slice"); f != nil && f.Changed {
		if d, err := time.ParseDuration(f.Value.String()); err != nil || d <= 0 {
			return usageError(fmt.Errorf("--time-slice %s: want a positive width (1h, 24h), or leave --time-slice out for the default", f.Value))
		}
	}
	// --checkpoint-interval 0 would quietly mean "only at the end": a run killed after hours would
	// have nothing to resume from
	if f := cmd.Flags().Lookup("checkpoint-interval"); f != nil && f.Changed {
		if d, err := time.ParseDuration(f.Value.String()); err != nil || d <= 0 {
			return usageError(fmt.Errorf("--checkpoint-interval %s: want a positive interval (1m, 30s): --resume continues from the last checkpoint; or leave --checkpoint-interval out for the default", f.Value))
		}
	}
	if f := cmd.Flags().Lookup("progress-interval"); f != nil && f.Changed {
		if d, err := time.ParseDuration(f.Value.String()); err != nil || d <= 0 {
			return usageError(fmt.Errorf("--progress-interval %s: want a positive duration (10s, 1m), or --progress never for no progress lines", f.Value))
		}
		// it paces the plain lines only: never prints none, a bar redraws on its own clock
		if m := cmd.Flags().Lookup("progress"); m != nil {
			switch mode := m.Value.String(); mode {
			case "never", "bar", "always":
				return usageError(fmt.Errorf("--progress-interval %s paces the plain progress lines, which --progress %s does not print: drop --progress-interval, or use --progress plain (or auto, plain when stderr is no terminal)", f.Value, mode))
			}
		}
	}
	return nil
}

// The flags of one kind of output: given for the other kind, migrate and replicate would ignore
// them, so they are refused instead. A SQL table has no files, regions or bulkload job; files
// have no connections or state folder of their own.
var (
	filesOnlyFlags = append([]string{"format", "regions", "max-file-size", "sort", "roll-size", "roll-interval"}, ltsFlagNames...)
	sqlOnlyFlags   = []string{"sql-conns", "state"}
)

// changedFlags lists, as --name, the flags of names that cmd's command line gave.
func changedFlags(cmd *cobra.Command, names []string) []string {
	var given []string
	for _, name := range names {
		if f := cmd.Flags().Lookup(name); f != nil && f.Changed {
			given = append(given, "--"+name)
		}
	}
	return given
}

// refuseOtherOutputFlags refuses the flags cmd was given that do not apply to the output out
// names (a SQL table, or bulk-load files in a folder or a bucket prefix).
func refuseOtherOutputFlags(cmd *cobra.Command, out string) error {
	names, applies := sqlOnlyFlags, "a SQL table (--out lindorm://..., mysql://...)"
	if sqlsink.IsURI(out) {
		names, applies = filesOnlyFlags, "bulk-load files (--out DIR, s3://, oss://)"
	}
	given := changedFlags(cmd, names)
	if len(given) == 0 {
		return nil
	}
	verb := "applies"
	if len(given) > 1 {
		verb = "apply"
	}
	return usageError(fmt.Errorf("%s %s to %s, not to --out %s: drop it", strings.Join(given, ", "), verb, applies, sourceuri.Redact(out)))
}
