package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/rekey/rekey/merge"
	"github.com/rekey/rekey/output"
	"github.com/rekey/rekey/sink/lindorm"
	"github.com/rekey/rekey/store"
	"github.com/rekey/rekey/transform"
)

type mergeFlags struct {
	out   string
	files string
}

// mergeLong is merge's --help text.
const mergeLong = `With no DIR, merge finishes the output that the N shards of one migration wrote together
(migrate --shard i/N --shared-out --out DIR): their data files already sit in DIR/data/, so it
writes metadata only, in a time that does not grow with the data:

  DIR/manifest.json                        every shard's data files where they lie, the totals summed
  DIR/ddl.sql, DIR/bulkload.json           as the shards wrote them (bulkload.json reads DIR/data, with
                                           the earliest shard's timestamp)

It refuses unless every shard 0..N-1 is there and complete, all of one migration (mapping, format,
region plan) and no two of them read the same input, and unless DIR/data/ holds exactly the files
the shards' manifests list. Each shard's rejected rows stay in DIR/shards/<i>-of-<N>/. Run again,
it writes the same files; interrupted, run it again to finish.

With DIRs, merge combines the --out directories of runs that migrated one table together, typically the N
shards of a Cassandra table (migrate --shard i/N), into one bulkload-ready directory:

  DIR/data/region-0000/part-00000.parquet ...   every input's files of the region, renumbered
  DIR/manifest.json                        regions, files and row counts summed over the inputs
  DIR/ddl.sql, DIR/bulkload.json           as the inputs wrote them (bulkload.json reads DIR/data)
  DIR/rejects.jsonl                        the inputs' rejected rows, one after the other (an input
                                           that is a finished shared output: its shards')
  DIR/rejected-rows/part-00000.csv ...     file sources: each input's rejected rows as read, under
                                           its header (or .jsonl), to run again with
                                           --source file:DIR/rejected-rows/ once the cause is fixed

Data files are hard-linked into DIR by default: no data is copied and the inputs stay intact, so
DIR must be on the same filesystem as the inputs (shared storage mounted on every machine is the
usual case); across filesystems they are copied instead. --files copy always copies; --files move
renames them out of the inputs.

merge first writes its plan (DIR/merge-plan.json: the inputs, --files, where every file goes),
then places the files, then the manifest, and removes the plan. An interrupted merge (a crash,
a kill, a lost connection) is finished by running the same command again: it reads the plan, and
a file already at its destination counts as placed, so --files move never loses a file. A merge
holds --out's lock (.rekey.lock) as migrate does: a second merge into the same --out meanwhile is
refused, naming the first.

Inputs and --out may be s3:// or oss:// prefixes. Within one bucket the server copies the files
(CopyObject; UploadPartCopy over 1 GiB): no data passes through rekey, and the inputs stay intact
(--files move deletes them once copied). The files are copied rather than named where they lie
because the bulkload job reads one folder: every file must sit under --out's data/. Between
buckets, servers or a folder and a bucket, rekey streams the bytes.

merge refuses inputs that are not complete runs (no manifest.json), a replication's output
(rekey replicate: its DELETE statements apply after its data files, which a merge would drop), inputs made with
different mappings (fingerprint), region plans or sources (naming the inputs to run again and how
they differ), inputs whose bulkload.json load into another namespace or LTS target (dst: the
merged job is the first input's), two that read the same source or the same
file (a run of a folder and a run of one file in it, a finished shared output and a run of
its source: its rows would be counted twice), shards that are not all the shards 0..N-1 of one source, each once (files,
or the same bytes of a file split in ranges, read by two shards, a shard missing or given twice; for Cassandra shards, token ranges that
overlap or leave part of the ring unread), and an --out
inside an input (a migrate --resume of that input would delete the merged files) or an input
inside --out, folders and bucket prefixes alike. It also refuses,
before placing any file, a manifest that lists a file outside its own directory (an absolute path,
"..", a symbolic link), anything but a regular file in a region folder, or a data file whose size
is not the one it lists (cut short by an incomplete copy).`

func newMergeCmd(inv *invocation) *cobra.Command {
	f := &mergeFlags{}
	cmd := &cobra.Command{
		Use:   "merge [DIR...] --out DIR",
		Short: "Combine the outputs of a sharded migration (--shard i/N on N machines) into one bulk-load set",
		Long:  mergeLong,
		Example: `  rekey merge --out /shared/out/orders
  rekey merge /shared/out/shard-0 /shared/out/shard-1 /shared/out/shard-2 --out /shared/out/orders
  rekey merge /shared/out/shard-* --out /shared/out/orders --files copy
  rekey merge s3://bucket/orders/shard-0 s3://bucket/orders/shard-1 --out s3://bucket/orders/all`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return runFinishShards(cmd, inv, f)
			}
			return runMerge(cmd, inv, args, f)
		},
	}
	cmd.Flags().StringVar(&f.out, "out", "", "output: a directory (must be new or empty), or s3://BUCKET/PREFIX or oss://BUCKET/PREFIX (inputs may be bucket prefixes too); with no DIR, the output the shards wrote together")
	cmd.Flags().StringVar(&f.files, "files", "link", "how data files reach --out: link (hard links, copy across filesystems), copy, or move (not with no DIR: nothing is placed)")
	return cmd
}

// runFinishShards is merge with no inputs: it finishes the output the shards wrote together.
func runFinishShards(cmd *cobra.Command, inv *invocation, f *mergeFlags) error {
	if f.out == "" {
		return usageError(errors.New("--out is required: the output the shards wrote together (migrate --shard i/N --shared-out), or give the outputs to merge: rekey merge DIR... --out DIR"))
	}
	if cmd.Flags().Changed("files") {
		return usageError(errors.New("--files applies to merging outputs (rekey merge DIR... --out DIR): finishing shards that wrote one --out together places no file"))
	}
	ctx := cmd.Context()
	out, err := inv.openStore(ctx, f.out)
	if err != nil {
		return err
	}
	// checked before the lock as well: a refused merge leaves no --out and lock file behind
	if output.LockLeavesFile(out) {
		if _, err := openShards(ctx, out); err != nil {
			return err
		}
	}
	locked, err := inv.lockMergeOut(ctx, out, f.out)
	if err != nil {
		return err
	}
	defer locked.Close()
	out = locked.Store
	// again under the lock: another merge may have finished them meanwhile
	inputs, err := openShards(ctx, out)
	if err != nil {
		return err
	}
	res, err := merge.FinishShards(ctx, inputs, out, version)
	if err != nil {
		return runFailed(fmt.Errorf("finish the shards in %s: %w (run the same command again once the cause is fixed)", f.out, err))
	}
	w := cmd.OutOrStdout()
	fmt.Fprintf(w, "Finished the %d shards in %s (metadata only: no data file copied)\n", len(inputs), f.out)
	printMerged(w, res.Manifest, inputs, fmt.Sprintf("%d (where the shards wrote them)", res.Manifest.Files))
	if res.Manifest.RowsRejected > 0 { // each shard keeps its rejects in its own folder
		fmt.Fprintf(w, "  rejected rows: %s\n", out.Location(output.ShardsDir+"/*/"))
	}
	return printMergeNext(ctx, w, out, f.out, res.Manifest)
}

func runMerge(cmd *cobra.Command, inv *invocation, dirs []string, f *mergeFlags) error {
	if f.out == "" {
		return usageError(errors.New("--out is required: the directory for the merged bulk-load files"))
	}
	mode, err := merge.ParseMode(f.files)
	if err != nil {
		return usageError(err)
	}
	ctx := cmd.Context()
	out, err := inv.openStore(ctx, f.out)
	if err != nil {
		return err
	}
	// checked before the lock as well: a refused merge leaves no --out and lock file behind
	if output.LockLeavesFile(out) {
		if _, err := inv.openMergeInputs(ctx, out, dirs, f.out); err != nil {
			return err
		}
	}
	locked, err := inv.lockMergeOut(ctx, out, f.out)
	if err != nil {
		return err
	}
	defer locked.Close()
	out = locked.Store
	// again under the lock: another merge may have written --out meanwhile
	inputs, err := inv.openMergeInputs(ctx, out, dirs, f.out)
	if err != nil {
		return err
	}
	res, err := merge.WriteTo(ctx, inputs, out, mode, version)
	if err != nil {
		return fmt.Errorf("merge: %w (the merge in %s is unfinished, and with --files move some files may be only there: run the same merge command again to finish it)", err, f.out)
	}
	w := cmd.OutOrStdout()
	fmt.Fprintf(w, "Merged %d runs into %s\n", len(inputs), f.out)
	printMerged(w, res.Manifest, inputs, fmt.Sprintf("%d (%s)", res.Manifest.Files, filesVerb(mode, res, res.Local)))
	if res.Manifest.RowsRejected > 0 {
		fmt.Fprintf(w, "  rejects: %s\n", out.Location(output.RejectsFile))
	}
	if res.ReplayParts > 0 { // a folder of files, each under its input's header: a source as it is
		again := out.Location(output.ReplayPartsDir + "/")
		if !store.IsBucket(again) {
			again = "file:" + again
		}
		fmt.Fprintf(w, "  rejected rows: %s (as read, %d files: once fixed, migrate them with --source %s)\n", out.Location(output.ReplayPartsDir+"/"), res.ReplayParts, again)
	}
	return printMergeNext(ctx, w, out, f.out, res.Manifest)
}

// openShards opens and checks the shards that wrote the output out together.
func openShards(ctx context.Context, out store.Store) ([]*merge.Input, error) {
	inputs, err := merge.OpenShards(ctx, out)
	if err != nil {
		return nil, mergeInputsExit(err)
	}
	if err := merge.Check(inputs); err != nil {
		return nil, usageError(err)
	}
	return inputs, nil
}

// openMergeInputs checks --out (name) and opens and checks the outputs dirs to merge into it.
func (inv *invocation) openMergeInputs(ctx context.Context, out store.Store, dirs []string, name string) ([]*merge.Input, error) {
	if err := checkMergeOut(ctx, out, name); err != nil {
		return nil, err
	}
	inputs, err := merge.OpenInputs(ctx, dirs, out, func(ctx context.Context, dir string) (store.Store, error) {
		return store.Open(ctx, dir, inv.getenv)
	})
	if err != nil {
		return nil, mergeInputsExit(err)
	}
	if err := merge.Check(inputs); err != nil {
		return nil, usageError(err)
	}
	return inputs, nil
}

// mergeInputsExit gives an error opening merge's inputs its exit code: a store that does not
// answer is a failed run (3), which the same command may get past; anything else refuses the
// inputs given (2).
func mergeInputsExit(err error) error {
	if errors.Is(err, merge.ErrRead) {
		return runFailed(fmt.Errorf("%w\nrun the same command again once it answers", err))
	}
	return usageError(err)
}

// printMergeNext prints the next steps after a merge, as after a finished migrate: create the
// table, submit the bulkload job merge wrote (read back from name, the output out), verify.
func printMergeNext(ctx context.Context, w io.Writer, out store.Store, name string, m *output.Manifest) error {
	data, err := out.Get(ctx, output.BulkloadFile)
	if store.IsNotExist(err) { // inputs written before rekey kept a bulkload job
		fmt.Fprintf(w, "\nNext steps: create the table (%s) and load the files of %s (docs/outputs.md)\n", output.DDLFile, out.Location(output.DataDir+"/"))
		return nil
	} else if err != nil {
		return runFailed(fmt.Errorf("read %s: %w", out.Location(output.BulkloadFile), err))
	}
	var job lindorm.BulkloadJob
	if err := json.Unmarshal(data, &job); err != nil {
		return runFailed(fmt.Errorf("%s: %w", out.Location(output.BulkloadFile), err))
	}
	fmt.Fprintln(w)
	fmt.Fprint(w, lindorm.NextSteps([]*lindorm.BulkloadJob{&job}, lindorm.NextRun{Out: name, RowsWritten: m.RowsWritten}))
	return nil
}

// printMerged prints the figures of a merged manifest, its rejected rows by code as the inputs
// count them (as a run's summary does); files says how many files and where.
func printMerged(w io.Writer, m *output.Manifest, inputs []*merge.Input, files string) {
	rows := [][2]string{
		{"rows in", fmt.Sprintf("%d", m.RowsIn)},
		{"rows written", fmt.Sprintf("%d", m.RowsWritten)},
		{"rows rejected", fmt.Sprintf("%d", m.RowsRejected)},
	}
	if codes, ok := merge.RejectCodes(inputs); ok {
		for _, c := range slices.Sorted(maps.Keys(codes)) {
			rows = append(rows, [2]string{"  " + c, fmt.Sprintf("%d", codes[c])})
		}
	}
	if m.RowsSkipped > 0 {
		rows = append(rows, [2]string{"rows skipped (older than since=)", fmt.Sprintf("%d", m.RowsSkipped)})
	}
	if m.NextSince != nil {
		rows = append(rows, [2]string{"next since", m.NextSince.Format(time.RFC3339) + " (the earliest shard's)"})
	}
	table(w, append(rows, [][2]string{
		{"regions", fmt.Sprintf("%d (%s)", m.Plan.Regions, m.Plan.Strategy)},
		{"files", files},
		{"bytes", transform.FormatSize(m.Bytes)},
	}...))
	printOversize(w, m)
}

func filesVerb(mode merge.Mode, res *merge.Result, local bool) string {
	if !local { // an object store: no hard links; a server-side copy within one bucket
		verb := fmt.Sprintf("%d copied by the server, %d through rekey", res.ServerCopied, res.Copied)
		switch {
		case res.Copied == 0:
			verb = "copied by the server, no data through rekey"
		case res.ServerCopied == 0:
			verb = "copied through rekey"
		}
		if mode == merge.Move {
			verb += ", inputs' files removed"
		}
		return verb
	}
	switch {
	case mode == merge.Move:
		return "moved"
	case mode == merge.Copy:
		return "copied"
	case res.Copied > 0:
		return fmt.Sprintf("hard-linked, %d copied across filesystems", res.Copied)
	}
	return "hard-linked"
}

// lockMergeOut takes the lock of --out (name) for this merge, as migrate takes its output's: a
// second merge into the same --out is refused, naming the first, and a merge that lost an object
// store's lock writes nothing more there.
func (inv *invocation) lockMergeOut(ctx context.Context, out store.Store, name string) (*output.Output, error) {
	logger, err := inv.logger()
	if err != nil {
		return nil, usageError(err)
	}
	locked, err := output.Lock(ctx, out, name, logger.Named("merge"))
	if errors.Is(err, output.ErrRefusedResume) {
		return nil, usageError(err)
	} else if err != nil {
		return nil, runFailed(err)
	}
	return locked, nil
}

// checkMergeOut refuses an --out that already holds files, unless they are an interrupted
// merge's (its plan is there), which this merge finishes: a merge never mixes into another output.
func checkMergeOut(ctx context.Context, out store.Store, name string) error {
	objs, err := out.List(ctx, "")
	if err != nil {
		return runFailed(fmt.Errorf("--out %s: %w", name, err))
	}
	if _, err := out.Stat(ctx, output.MergePlanFile); err == nil {
		return nil
	}
	for _, o := range objs {
		if o.Name == output.ManifestFile { // a merge (or a run) into it completed: nothing to finish
			return usageError(fmt.Errorf("--out %s already holds a complete output (%s, and no %s of an interrupted merge): if this merge wrote it, it is complete and nothing is left to do; "+
				"load it as it is (its %s and %s) and check it with rekey verify --target %s; to merge other outputs, give a new --out", name, output.ManifestFile, output.MergePlanFile, output.DDLFile, output.BulkloadFile, name))
		}
	}
	for _, o := range objs {
		if o.Name != output.LockFile {
			return usageError(fmt.Errorf("--out %s already holds files: merge into a new --out directory", name))
		}
	}
	return nil
}
