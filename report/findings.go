package report

import (
	"fmt"
	"sort"
	"strings"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/transform"
)

// Rules and their thresholds. Each rule gives one finding (key_json_text one per column); the
// README lists them with the same numbers.
const (
	// key_length: warn when 1% of keys are longer than this.
	longKeyP99 = 512
	// first_column_cardinality: warn below this many distinct first-column values.
	fewValues = 100
	// first_column_skew: warn when one value holds more than this share of the rows (and more
	// than 2 regions' worth).
	skewShare = 0.2
	// first_column_prefix: warn when every value shares a prefix this long that is at least half
	// of the shortest value.
	prefixBytes = 3
	// first_column_monotonic: warn at this share of rows >= (or <=) the previous one.
	monotonicShare = 0.9
	// region_balance: warn when the busiest region holds this many times the mean.
	balanceMaxMean = 2.0
	// write_hotspot: warn when, per window, the busiest region takes this many times its share.
	hotFactorWarn = 2.5
)

func finding(rule, sev, msg string, ev map[string]float64) Finding {
	if ev == nil {
		ev = map[string]float64{}
	}
	return Finding{Rule: rule, Severity: sev, Message: msg, Evidence: ev}
}

func pct(x float64) string {
	switch {
	case x == 0:
		return "0%"
	case x < 0.001:
		return "<0.1%"
	case x >= 0.995 && x < 1:
		return fmt.Sprintf("%.1f%%", 100*x)
	}
	return fmt.Sprintf("%.1f%%", 100*x)
}

func count(n int64) string {
	s := itoa(n)
	if n < 0 {
		return s
	}
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// evaluate applies the rules to the figures, sorts the findings worst first and sets the verdict.
func evaluate(rep *Report, strict bool) {
	var fs []Finding
	add := func(f Finding) { fs = append(fs, f) }
	t, k, u, fc, dist, hs := rep.Totals, rep.Key, rep.Uniqueness, rep.FirstColumn, rep.Distribution, rep.Hotspot
	n := rep.Plan.Regions
	onSample := ""
	if rep.Source.Sampled {
		onSample = " (on the sample)"
	}

	// rejects
	if t.RowsAnalysed == 0 {
		// nothing was judged: an empty file, a window past a topic's end, a wrong --source
		add(finding("no_rows", SevWarning, "the source gave no rows, so nothing here says whether the key design hotspots or loses rows: check --source (an empty file? a Kafka window past the topic's end?)", map[string]float64{"rows": 0}))
	} else if t.RowsRejected > 0 {
		share := float64(t.RowsRejected) / float64(max(t.RowsAnalysed, 1))
		ev := map[string]float64{"rows_rejected": float64(t.RowsRejected), "share": share}
		var parts []string
		for _, c := range sortedCodes(t.RejectCodes) {
			ev["code_"+c] = float64(t.RejectCodes[c])
			parts = append(parts, fmt.Sprintf("%s %s", c, count(t.RejectCodes[c])))
		}
		add(finding("rejects", SevWarning, fmt.Sprintf("%s of %s rows (%s) would not be migrated: %s", count(t.RowsRejected),
			count(t.RowsAnalysed), pct(share), strings.Join(parts, ", ")), ev))
	} else {
		add(finding("rejects", SevInfo, fmt.Sprintf("all %s rows pass the mapping", count(t.RowsAnalysed)), map[string]float64{"rows_rejected": 0, "share": 0}))
	}

	// key columns
	kev := map[string]float64{"columns": float64(k.Columns)}
	switch {
	case k.Columns > transform.MaxKeyColumns:
		add(finding("key_columns", SevError, fmt.Sprintf("%d key columns: Lindorm allows at most %d", k.Columns, transform.MaxKeyColumns), kev))
	case k.Columns > 3:
		add(finding("key_columns", SevWarning, fmt.Sprintf("%d key columns: the design guide recommends 1-3 (fewer columns, smaller keys, faster writes)", k.Columns), kev))
	default:
		add(finding("key_columns", SevInfo, fmt.Sprintf("%d key column%s (guide: 1-3)", k.Columns, plural(k.Columns)), kev))
	}

	// key length
	lev := map[string]float64{"min_bytes": float64(k.MinBytes), "mean_bytes": k.MeanBytes, "p99_bytes": float64(k.P99Bytes),
		"max_bytes": float64(k.MaxBytes), "over_limit": float64(k.OverLimit), "fixed": b2f(k.FixedLength)}
	shape := "variable length"
	if k.FixedLength {
		shape = "fixed length"
	}
	lens := fmt.Sprintf("key bytes min %d / mean %.1f / p99 %d / max %d, %s", k.MinBytes, k.MeanBytes, k.P99Bytes, k.MaxBytes, shape)
	switch {
	case k.OverLimit > 0:
		add(finding("key_length", SevError, fmt.Sprintf("%s keys are longer than Lindorm's %d bytes (rejected as key_too_long); %s", count(k.OverLimit), transform.MaxKeyBytes, lens), lev))
	case k.P99Bytes > longKeyP99:
		add(finding("key_length", SevWarning, fmt.Sprintf("long keys: %s (guide: keep keys short, prefer fixed-length values such as BIGINT)", lens), lev))
	default:
		add(finding("key_length", SevInfo, lens, lev))
	}

	// uniqueness
	uev := map[string]float64{"keys": float64(u.Keys), "colliding_keys": float64(u.CollidingKeys), "collision_rows": float64(u.CollisionRows),
		"duplicate_rows": float64(u.DuplicateRows), "exact": b2f(u.Exact)}
	if u.CollisionRows > 0 {
		msg := fmt.Sprintf("%s rows would be silently overwritten: %s target keys are produced by more than one distinct source row%s", count(u.CollisionRows), count(u.CollidingKeys), onSample)
		if len(u.Examples) > 0 {
			ex := u.Examples[0]
			msg += "; e.g. key " + strings.Join(ex.Key, "|") + " <- " + originsText(ex, u.SourceColumns)
			switch {
			case ex.SameKeySources && len(ex.DifferIn) > 0:
				msg += ", which differ only in " + listText(ex.DifferIn) + ", columns the key does not read: the key does not identify a source row"
			case ex.SameKeySources:
				msg += ", which differ only in columns the key does not read: the key does not identify a source row"
			case len(ex.DifferIn) > 0:
				msg += ", which differ in " + listText(ex.DifferIn)
			}
		}
		if sg := u.Suggestion; sg != nil {
			msg += "; " + sg.Message
			uev["suggested_columns"] = float64(len(sg.Add))
			uev["suggestion_separates_all"] = b2f(sg.SeparatesAll)
		}
		add(finding("uniqueness", SevError, msg, uev))
	} else {
		add(finding("uniqueness", SevInfo, fmt.Sprintf("no collisions: %s distinct keys from as many distinct source rows%s", count(u.Keys), onSample), uev))
	}
	if u.DuplicateRows > 0 {
		add(finding("duplicates", SevInfo, fmt.Sprintf("%s rows are identical repeats of another row (same key, same values): they collapse into one, nothing is lost", count(u.DuplicateRows)),
			map[string]float64{"duplicate_rows": float64(u.DuplicateRows)}))
	}

	// first column
	name := fc.Name
	cev := map[string]float64{"distinct": float64(fc.Distinct), "regions": float64(n), "exact": b2f(fc.DistinctExact)}
	approx := ""
	if !fc.DistinctExact {
		approx = "about "
	}
	switch {
	case t.RowsOK == 0:
	case fc.Distinct < int64(n):
		add(finding("first_column_cardinality", SevWarning, fmt.Sprintf("first key column %s has only %s%s distinct values for %d regions: %d regions can never get data (enumerated values: the guide's \"order type or status code\" case)", name, approx, count(fc.Distinct), n, n-int(fc.Distinct)), cev))
	case fc.Distinct < fewValues && rep.Plan.Strategy == "int_bucket":
		add(finding("first_column_cardinality", SevInfo, fmt.Sprintf("first key column %s is a bucket with %s%s values for %d regions, by design", name, approx, count(fc.Distinct), n), cev))
	case fc.Distinct < fewValues && splitByNext(rep):
		add(finding("first_column_cardinality", SevInfo, fmt.Sprintf("first key column %s has only %s%s distinct values, but its values pass the region size and the next key column spreads them: Lindorm splits each into regions of its own (pre-split can only cut between values of %s)", name, approx, count(fc.Distinct), name), cev))
	case fc.Distinct < fewValues:
		add(finding("first_column_cardinality", SevWarning, fmt.Sprintf("first key column %s has only %s%s distinct values: writes pile up on a few key ranges", name, approx, count(fc.Distinct)), cev))
	default:
		add(finding("first_column_cardinality", SevInfo, fmt.Sprintf("first key column %s has %s%s distinct values", name, approx, count(fc.Distinct)), cev))
	}
	if len(fc.Top) > 0 && t.RowsOK > 0 {
		add(skewFinding(rep, fc.Top[0], max(skewShare, 2/float64(max(n, 1)))))
	}
	if fc.PrefixBytes > 0 && t.RowsOK > 1 && fc.Distinct > 1 && isTextType(fc.Type) {
		pev := map[string]float64{"prefix_bytes": float64(fc.PrefixBytes), "min_bytes": float64(fc.MinBytes)}
		if fc.PrefixBytes >= prefixBytes && 2*fc.PrefixBytes >= fc.MinBytes {
			add(finding("first_column_prefix", SevWarning, fmt.Sprintf("every value of %s starts with \"%s\" (%d of at least %d bytes): a shared prefix clusters keys (the guide's \"column with a shared prefix\")", name, fc.CommonPrefix, fc.PrefixBytes, fc.MinBytes), pev))
		} else {
			add(finding("first_column_prefix", SevInfo, fmt.Sprintf("every value of %s starts with \"%s\"", name, fc.CommonPrefix), pev))
		}
	}
	mono := max(fc.MonotonicUp, fc.MonotonicDown)
	ordered, incFirst := "arrival order", false
	if wo := rep.WriteOrder; wo != nil {
		ordered = "write order (" + wo.Label() + ")"
		incFirst = len(wo.KeyColumns) > 0 && wo.KeyColumns[0].Incremental
	}
	if t.RowsOK > 1 {
		mev := map[string]float64{"monotonic_up": fc.MonotonicUp, "monotonic_down": fc.MonotonicDown}
		dir := "increasing"
		if fc.MonotonicDown > fc.MonotonicUp {
			dir = "decreasing"
		}
		msg := fmt.Sprintf("first key column %s is monotonic: in %s, %s of rows come with a value %s the previous one (timestamps, auto-increment ids): every new row lands at the end of the key space, in one region", name, ordered, pct(mono), map[string]string{"increasing": ">=", "decreasing": "<="}[dir])
		switch {
		case mono >= monotonicShare && fc.Distinct > 1 && incFirst:
			add(finding("first_column_monotonic", SevInfo, msg+" (the incremental_key_column warning)", mev))
		case mono >= monotonicShare && fc.Distinct > 1:
			add(finding("first_column_monotonic", SevWarning, msg, mev))
		default:
			add(finding("first_column_monotonic", SevInfo, fmt.Sprintf("first key column %s is not monotonic in %s (%s of rows >= the previous, %s <=)", name, ordered, pct(fc.MonotonicUp), pct(fc.MonotonicDown)), mev))
		}
	}
	writeOrderFindings(rep, add)
	for _, kc := range rep.Mapping.KeyColumns {
		if kc.JSONLike == 0 && kc.LongText == 0 {
			continue
		}
		var what []string
		if kc.JSONLike > 0 {
			what = append(what, count(kc.JSONLike)+" values look like JSON")
		}
		if kc.LongText > 0 {
			what = append(what, fmt.Sprintf("%s values are longer than %d bytes", count(kc.LongText), longTextBytes))
		}
		add(finding("key_json_text", SevWarning, fmt.Sprintf("key column %s: %s (max %d bytes): the guide says not to put JSON or long text in the primary key", kc.Name, strings.Join(what, ", "), kc.MaxBytes),
			map[string]float64{"json_like": float64(kc.JSONLike), "long_text": float64(kc.LongText), "max_bytes": float64(kc.MaxBytes)}))
	}

	fs = append(fs, columnFindings(rep)...)

	// regions
	pev := map[string]float64{"regions": float64(n)}
	msg := fmt.Sprintf("%d regions, strategy %s (from %s)", n, rep.Plan.Strategy, rep.Plan.Origin)
	if rep.Plan.Note != "" {
		msg += ": " + rep.Plan.Note
	}
	add(finding("region_plan", SevInfo, msg, pev))
	if n > 1 && t.RowsOK > 0 {
		bev := map[string]float64{"rows_max_mean": dist.RowsMaxMean, "bytes_max_mean": dist.BytesMaxMean, "cv": dist.CV, "empty_regions": float64(dist.EmptyRegions)}
		hot := ""
		if len(dist.HottestRegions) > 0 {
			r := rep.Regions[dist.HottestRegions[0]]
			hot = fmt.Sprintf("; busiest region %d holds %s of the rows", r.Index, pct(r.Share))
		}
		if dist.RowsMaxMean >= balanceMaxMean {
			add(finding("region_balance", SevWarning, fmt.Sprintf("unbalanced regions: the busiest holds %.1fx the mean (CV %.2f)%s; bulkload takes as long as its slowest region", dist.RowsMaxMean, dist.CV, hot), bev))
		} else {
			add(finding("region_balance", SevInfo, fmt.Sprintf("balanced regions: max/mean %.2f, CV %.2f", dist.RowsMaxMean, dist.CV), bev))
		}
		if dist.EmptyRegions > 0 {
			why := ""
			if dist.Unreachable > 0 {
				why = fmt.Sprintf(": the first column has only %s values", count(fc.Distinct))
			}
			add(finding("empty_regions", SevWarning, fmt.Sprintf("%d of %d regions get no rows%s", dist.EmptyRegions, n, why),
				map[string]float64{"empty_regions": float64(dist.EmptyRegions), "unreachable_regions": float64(dist.Unreachable)}))
		}
		hev := map[string]float64{"mean_top_share": hs.MeanTopShare, "max_top_share": hs.MaxTopShare, "even_share": hs.EvenShare,
			"hot_factor": hs.HotFactor, "windows": float64(hs.Windows), "rows_per_window": float64(hs.RowsPerWindow)}
		if hs.Windows > 0 && hs.HotFactor >= hotFactorWarn {
			why := ""
			if mono >= monotonicShare {
				why = " (the incremental primary key hotspot: Lindorm cannot split it away, new rows always land in the last range)"
			}
			add(finding("write_hotspot", SevWarning, fmt.Sprintf("write hotspot: in each window of %s rows in %s the busiest region takes %s of the writes on average (even: %s, %.1fx)%s; continuous writes in this order would load one region at a time",
				count(hs.RowsPerWindow), ordered, pct(hs.MeanTopShare), pct(hs.EvenShare), hs.HotFactor, why), hev))
		} else if hs.Windows > 0 {
			add(finding("write_hotspot", SevInfo, fmt.Sprintf("writes spread over time in %s: the busiest region of a window takes %s on average (even: %s, %.1fx)", ordered, pct(hs.MeanTopShare), pct(hs.EvenShare), hs.HotFactor), hev))
		}
	}

	// advisor
	if len(rep.Alternatives) > 0 {
		best := rep.Alternatives[0]
		var own *Alternative
		for i := range rep.Alternatives {
			if rep.Alternatives[i].IsMapping {
				own = &rep.Alternatives[i]
			}
		}
		aev := map[string]float64{"alternatives": float64(len(rep.Alternatives))}
		if own != nil {
			aev["mapping_rank"] = float64(own.Rank)
		}
		if own != nil {
			for i, q := range own.Queries {
				qev := map[string]float64{"query": float64(i + 1), "scans": float64(q.Scans), "full_scan": b2f(q.Access == "full_scan"), "filtered": float64(len(q.Filtered))}
				msg := fmt.Sprintf("q%d %s: %s", i+1, q.Query, q.Note)
				if q.Access == "full_scan" || q.Access == "scan" && len(q.Filtered) > 0 {
					add(finding("query_access", SevWarning, msg, qev))
				} else {
					add(finding("query_access", SevInfo, msg, qev))
				}
			}
		}
		switch {
		case own != nil && best.IsMapping:
			add(finding("advisor", SevInfo, fmt.Sprintf("the mapping's design ranks first of %d (%s)", len(rep.Alternatives), own.Grade), aev))
		case own != nil:
			add(finding("advisor", SevInfo, fmt.Sprintf("the advisor ranks %s %s first (%s, hot factor %.1f); the mapping ranks %d (%s)", best.Name, best.PrimaryKey, best.Grade, writeHotFactor(&best), own.Rank, own.Grade), aev))
		}
	}
	if rep.Source.Sampled {
		add(finding("sample", SevInfo, fmt.Sprintf("analysed %s: figures are for the %s rows read; collisions between rows outside the sample are not seen", rep.Source.Sample, count(t.RowsAnalysed)),
			map[string]float64{"scale": rep.Source.Scale}))
	}

	order := map[string]int{SevError: 0, SevWarning: 1, SevInfo: 2}
	sort.SliceStable(fs, func(i, j int) bool { return order[fs[i].Severity] < order[fs[j].Severity] })
	rep.Findings = fs
	v := Verdict{Strict: strict}
	for _, f := range fs {
		switch f.Severity {
		case SevError:
			v.Errors++
		case SevWarning:
			v.Warnings++
		default:
			v.Infos++
		}
	}
	switch {
	case v.Errors > 0:
		v.ExitCode = 2
	case strict && v.Warnings > 0:
		v.ExitCode = 1
	}
	rep.Verdict = v
}

func originsText(ex CollisionExample, cols []string) string {
	var parts []string
	for _, o := range ex.Origins {
		var kv []string
		for _, k := range cols {
			if v, ok := o.Values[k]; ok {
				kv = append(kv, k+"="+v)
			}
		}
		parts = append(parts, "("+strings.Join(kv, ", ")+")")
	}
	return strings.Join(parts, " and ")
}

func isTextType(t string) bool {
	return t == pipeline.TypeVarchar.String() || t == pipeline.TypeVarbinary.String()
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
