package migrate

import (
	"context"
	"errors"
	"fmt"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/transform"
)

// The one sample -> region plan step that check, migrate, replicate and report share: a spread
// sample of the source through the mapping places quantile split keys over the whole input, and
// with the source's row estimate gives the target's size (regions.size).

// Sample reads a spread sample of n rows from src when it can sample (pipeline.Sampler; nil, 0
// otherwise), applies the mapping to it, and estimates the target's bytes from it and the
// source's row estimate (0 without one).
func Sample(ctx context.Context, prog *transform.Program, src pipeline.Source, n int) (sample [][]pipeline.Value, estBytes int64, err error) {
	sample, estBytes, _, err = sampleSource(ctx, prog, src, n)
	return sample, estBytes, err
}

// sampleSource is Sample, with how many records the source gave (-1: it cannot sample).
func sampleSource(ctx context.Context, prog *transform.Program, src pipeline.Source, n int) (sample [][]pipeline.Value, estBytes int64, read int, err error) {
	s, ok := src.(pipeline.Sampler)
	if !ok {
		return nil, 0, -1, nil
	}
	recs, err := s.Sample(ctx, n)
	if err != nil {
		return nil, 0, 0, fmt.Errorf("sample the source: %w", err)
	}
	sample = prog.SampleRows(recs)
	if sz, ok := src.(pipeline.Sizer); ok {
		rows := sz.EstimatedRows()
		if w, ok := src.(pipeline.WholeSizer); ok { // a shard: the plan is the whole input's
			rows = w.WholeEstimatedRows()
		}
		estBytes = prog.EstimateBytes(sample, rows)
	}
	return sample, estBytes, len(recs), nil
}

// PlanRegions is the region plan of regions regions (0: the mapping's), sampling src (nil: no
// source) with Sample when the plan needs a sample. A plan that cannot be made is a *Refused.
func PlanRegions(ctx context.Context, prog *transform.Program, src pipeline.Source, regions, n int) (pipeline.RegionPlan, [][]pipeline.Value, error) {
	var sample [][]pipeline.Value
	var est int64
	read := -1 // records the source gave the sample (-1: none asked, or it cannot sample)
	if src != nil && prog.PlanNeedsSample(regions) {
		var err error
		if sample, est, read, err = sampleSource(ctx, prog, src, n); err != nil {
			return pipeline.RegionPlan{}, nil, err
		}
	}
	if prog.CountFromSize(regions) && est == 0 && (src == nil || len(sample) > 0) {
		// without a size the count would silently be 1: every row in one region
		why := "and no --source gives it: pass --source,"
		if src != nil {
			why = "which this source cannot estimate (gzip files, whose rows are not known, or a Cassandra table without size estimates yet):"
		}
		return pipeline.RegionPlan{}, nil, &Refused{fmt.Errorf("region plan: regions.size derives the region count from the data size, %s "+
			"set regions.count in the mapping (the data size / regions.size) or pass --regions N", why)}
	}
	plan, err := prog.PlanRegions(transform.RegionRequest{Count: regions, Sample: sample, EstimatedBytes: est})
	if errors.Is(err, transform.ErrNoSample) && read >= 0 {
		// a source was sampled: "give a source" would be wrong, the sample held no row to place
		why := "the source gave no rows to sample (an empty input): set regions.split_keys (or --regions 1)"
		if read > 0 {
			why = fmt.Sprintf("all %d rows sampled from the source were rejected by the mapping (rekey report -m MAPPING --source ... lists why): "+
				"fix the mapping or the input, or set regions.split_keys (or --regions 1)", read)
		}
		return plan, sample, &Refused{fmt.Errorf("region plan: quantile split keys on the first key column are placed from the rows of a sample of the source, and %s", why)}
	}
	if err != nil {
		return plan, sample, &Refused{fmt.Errorf("region plan: %w", err)}
	}
	return plan, sample, nil
}
