package advise

import (
	"fmt"
	"strings"

	"github.com/rekey/rekey/report/model"
	"github.com/rekey/rekey/transform"
)

// IndexOffers lists an index for each declared query with equality columns that the mapping's
// own design serves only with a scan of the whole table.
func (a *Advisor) IndexOffers(alts []model.Alternative, table string) []model.IndexOffer {
	out := []model.IndexOffer{}
	var own *model.Alternative
	for i := range alts {
		if alts[i].IsMapping {
			own = &alts[i]
		}
	}
	if own == nil || own.Error != "" || len(a.bases) == 0 {
		return out
	}
	prog := a.prog
	sk := SourceKey(prog)
	byID := map[string]*model.Alternative{}
	for i := range alts {
		byID[alts[i].ID] = &alts[i]
		if alts[i].SameAs != "" {
			byID[alts[i].SameAs] = &alts[i]
		}
	}
	for i, q := range a.queries {
		if i >= len(own.Queries) || own.Queries[i].Access != "full_scan" || len(q.Equal) == 0 {
			continue
		}
		order := queryOrder(prog, sk, q)
		prefix, found := "", false
		for _, b := range a.bases {
			if strings.Join(b.cols, "\x00") == strings.Join(order, "\x00") {
				prefix, found = b.prefix, true
				break
			}
		}
		if !found {
			continue // more declared queries than the advisor derives keys for
		}
		plainID := "source_key"
		if prefix != "" {
			plainID = strings.TrimSuffix(prefix, "_")
		}
		n := len(q.Equal)
		if q.Range != "" {
			n++
		}
		cols := order[:min(n, len(order))]
		var target []string
		for _, c := range cols {
			if t := prog.CarriedAs(c); t != "" {
				target = append(target, t)
			}
		}
		plain := byID[plainID]
		if plain != nil && plain.Error == "" && len(target) == len(cols) && spreadGrade(plain) != "poor" {
			x := secondaryIndex(q, table, target, plain)
			if enumerated(plain, a.N) {
				x.Note += fmt.Sprintf("; %s takes only %s values for %d regions: the index rows of one value share one key range until Lindorm splits it by the rest of the index key", cols[0], model.Count(plain.Distinct), a.N)
			}
			out = append(out, x)
			continue
		}
		// the index key would concentrate writes (or the table does not hold the columns as they
		// are): an index table keyed by the best design for the query
		if x, ok := indexTable(alts, q, plainID, prefix, cols, plain, len(target) == len(cols)); ok {
			out = append(out, x)
		}
	}
	return out
}

// indexTable offers an index table for query q, keyed by the best design derived for it (ids
// plainID or prefix...) that spreads writes and loses no row; ok is false when there is none.
// plain is the design keyed by the query's columns cols as they are; carried says the table
// holds those columns.
func indexTable(alts []model.Alternative, q transform.Query, plainID, prefix string, cols []string, plain *model.Alternative, carried bool) (x model.IndexOffer, ok bool) {
	var best *model.Alternative
	for k := range alts {
		a := &alts[k]
		if (a.ID == plainID || prefix != "" && strings.HasPrefix(a.ID, prefix)) && a.Error == "" && a.Salt == 0 && spreadGrade(a) != "poor" && !loses(a) {
			if best == nil || a.Rank < best.Rank {
				best = a
			}
		}
	}
	if best == nil {
		return x, false
	}
	why := "the table does not hold " + ListText(cols) + " as they are, so Lindorm cannot index them"
	if plain != nil && carried {
		why = fmt.Sprintf("a secondary index keyed %s would concentrate writes as design %s does (%s, hot %.1fx; the wide-table guide: \"the column for which a secondary index is created must be designed in the same manner as the primary key\")",
			Bracketed(cols), plain.ID, spreadGrade(plain), WriteHotFactor(plain))
	}
	return model.IndexOffer{Query: q.String(), Kind: "index_table", Key: best.PrimaryKey, Design: best.ID, Grade: best.Grade,
		Note: why + fmt.Sprintf("; an index table keyed %s (design %s, %s) serves it: --write-mapping DIR writes it as DIR/%s.yaml, to migrate from the same source as a second table; the client reads the index table, then the main table by its key", best.PrimaryKey, best.ID, best.Grade, best.ID)}, true
}

// secondaryIndex is the CREATE INDEX for query q on table's columns cols (the query's equality
// columns, then its range column, DESC when the query reads it newest first).
func secondaryIndex(q transform.Query, table string, cols []string, judge *model.Alternative) model.IndexOffer {
	var parts, names []string
	for k, c := range cols {
		p := sqlName(c)
		if q.NewestFirst && k == len(cols)-1 && q.Range != "" {
			p += " DESC"
		}
		parts = append(parts, p)
		names = append(names, strings.ToLower(strings.NewReplacer("-", "_", "`", "").Replace(c)))
	}
	name := "idx_" + strings.ToLower(table) + "_" + strings.Join(names, "_")
	ddl := fmt.Sprintf("CREATE INDEX IF NOT EXISTS %s ON %s (%s) ASYNC;", sqlName(name), sqlName(table), strings.Join(parts, ", "))
	return model.IndexOffer{Query: q.String(), Kind: "secondary_index", Key: Bracketed(cols), Design: judge.ID, Grade: judge.Grade, DDL: ddl,
		Note: fmt.Sprintf("the index key %s spreads writes as design %s does (%s, hot %.1fx); every write also writes the index (the wide-table guide: do not create a large number of secondary indexes); run it after the bulk load: rows a bulk load writes are not indexed as they land, and building the index reads the table (on LindormTable 2.2.16 to 2.6.3 follow it with BUILD INDEX %s ON %s)",
			Bracketed(cols), judge.ID, judge.Grade, WriteHotFactor(judge), sqlName(name), sqlName(table))}
}

// sqlName writes an identifier for Lindorm SQL: as it is when plain, else in backquotes.
func sqlName(s string) string {
	plain := s != ""
	for i, c := range s {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			plain = false
		}
	}
	if plain {
		return s
	}
	return "`" + strings.ReplaceAll(s, "`", "``") + "`"
}
