package merge

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/rekey/rekey/output"
	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/store"
)

// OpenShards reads the shards that wrote the shared output out together (migrate --shard i/N
// --shared-out), each as an Input: its manifest, checkpoint and ddl.sql in its folder
// (output.ShardDir). It refuses an output holding no shards, shards of different counts, a shard
// missing or not complete, and a shard's manifest listing a file that is not the shard's own.
// Check then says whether they belong to one migration, as it does for merged outputs.
func OpenShards(ctx context.Context, out store.Store) ([]*Input, error) {
	shards, err := output.SharedShards(ctx, out)
	if err != nil {
		return nil, err
	}
	if len(shards) == 0 {
		return nil, fmt.Errorf("--out %s holds no shards (%s/): give the outputs to merge (rekey merge DIR... --out DIR), or run the shards with --shard i/N --shared-out --out %s first",
			out.Location(""), output.ShardsDir, out.Location(""))
	}
	count := shards[0].Count
	byIndex := map[int]pipeline.Shard{}
	for _, sh := range shards {
		if sh.Count != count {
			return nil, fmt.Errorf("--out %s holds shards of %d and of %d: the shards of one migration are i/N with the same N; finish each migration in its own --out", out.Location(""), count, sh.Count)
		}
		byIndex[sh.Index] = sh
	}
	var missing []string
	for i := range count {
		if _, ok := byIndex[i]; !ok {
			missing = append(missing, fmt.Sprintf("%d/%d", i, count))
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("shard %s missing in %s: run every shard i/%d with --shared-out --out %s, then finish them", strings.Join(missing, ", "), out.Location(""), count, out.Location(""))
	}
	var inputs []*Input
	for i := range count {
		sh := byIndex[i]
		st := output.ShardStore(out, sh)
		in := &Input{Dir: "shard " + sh.String(), Store: st}
		notDone := fmt.Errorf("shard %s is not complete (no %s in %s): run it to its end (the same rekey migrate command with --resume)", sh, output.ManifestFile, st.Location(""))
		if _, err := st.Stat(ctx, output.ManifestFile); store.IsNotExist(err) {
			return nil, notDone
		} else if err != nil {
			return nil, readFailed(err)
		}
		if in.Manifest, err = output.ReadManifest(ctx, st); err != nil {
			return nil, err
		}
		if in.Checkpoint, err = output.ReadCheckpoint(ctx, st); err != nil {
			return nil, err
		}
		if in.Checkpoint == nil || !in.Checkpoint.Complete {
			return nil, notDone
		}
		if !plainName(in.Manifest.Format) {
			return nil, fmt.Errorf("%s: format %q is not a file format name", st.Location(output.ManifestFile), in.Manifest.Format)
		}
		prefix := output.ShardFilePrefix(sh)
		for _, r := range in.Manifest.Regions {
			for _, fe := range r.Files {
				if base := fe.Path[strings.LastIndexByte(fe.Path, '/')+1:]; !strings.HasPrefix(base, prefix) {
					return nil, fmt.Errorf("%s lists %s, which is not shard %s's (its files are named %s...): was it edited by hand?", st.Location(output.ManifestFile), fe.Path, sh, prefix)
				}
			}
		}
		if in.DDL, err = st.Get(ctx, output.DDLFile); err != nil {
			return nil, readFailed(fmt.Errorf("shard %s: %w", sh, err))
		}
		if in.Job, err = readJob(ctx, st); err != nil {
			return nil, fmt.Errorf("shard %s: %w", sh, err)
		}
		inputs = append(inputs, in)
	}
	return inputs, nil
}

// FinishShards writes the final files of the shared output out from its shards (OpenShards, once
// Check accepted them): manifest.json listing every shard's data files where they lie, with the
// totals summed, ddl.sql and bulkload.json (the earliest shard's timestamp). No data file is
// copied or moved, so its time does not grow with the data. It first checks that data/ holds
// exactly the files the shards' manifests list, whole: a file no shard lists would be loaded as
// data. The manifest is written last; run again, FinishShards writes the same files.
func FinishShards(ctx context.Context, inputs []*Input, out store.Store, version string) (*Result, error) {
	m, err := sumManifests(inputs, version, func(_, _, _ int, fe output.FileEntry) string { return fe.Path })
	if err != nil {
		return nil, err
	}
	if err := checkDataListed(ctx, out, m); err != nil {
		return nil, err
	}
	if err := writeFinal(ctx, inputs, out, m); err != nil {
		return nil, err
	}
	return &Result{Manifest: m}, nil
}

// checkDataListed refuses an output whose data/ does not hold exactly the files m lists, each of
// the size listed: one listing of data/, no file read.
func checkDataListed(ctx context.Context, out store.Store, m *output.Manifest) error {
	objs, err := out.List(ctx, output.DataDir+"/")
	if err != nil {
		return err
	}
	found := make(map[string]int64, len(objs))
	for _, o := range objs {
		found[o.Name] = o.Size
	}
	for _, r := range m.Regions {
		for _, fe := range r.Files {
			size, ok := found[fe.Path]
			switch {
			case !ok:
				return fmt.Errorf("%s is missing: a shard's manifest lists it; restore it, or run that shard again into a new --out", out.Location(fe.Path))
			case size != fe.Bytes:
				return fmt.Errorf("%s holds %d bytes, its shard's manifest %d: it was changed since the shard wrote it", out.Location(fe.Path), size, fe.Bytes)
			}
			delete(found, fe.Path)
		}
	}
	if len(found) > 0 {
		var stray []string
		for name := range found {
			stray = append(stray, name)
		}
		return fmt.Errorf("%s holds %d file(s) that no shard's manifest lists (%s): the bulk load would read them as data; remove them (or run the shard that wrote them to its end with --resume, which removes them)",
			out.Location(output.DataDir+"/"), len(stray), strings.Join(firstSorted(stray, 5), ", "))
	}
	return nil
}

// firstSorted is the first n of names in order.
func firstSorted(names []string, n int) []string {
	slices.Sort(names)
	if len(names) > n {
		return append(names[:n:n], "...")
	}
	return names
}
