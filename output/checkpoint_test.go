package output

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/store"
)

// A resume routes rows by the checkpoint's plan: its split values must come back as they were
// written, the raw bytes of a VARBINARY first column too (a quantile split of blobs is rarely
// UTF-8, which a JSON string cannot hold as is).
func TestCheckpointKeepsSplitBytes(t *testing.T) {
	st, err := store.NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	plan := pipeline.RegionPlan{Type: pipeline.TypeVarbinary, Strategy: "quantile",
		Splits: []pipeline.Value{pipeline.Bytes("\x00\x7f"), pipeline.Bytes("\x80\xff\xfe"), pipeline.Bytes("\xc3\xa9z")}}
	if err := saveCheckpoint(ctx, st, &pipeline.Checkpoint{Plan: plan}); err != nil {
		t.Fatal(err)
	}
	cp, err := ReadCheckpoint(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	if len(cp.Plan.Splits) != len(plan.Splits) {
		t.Fatalf("splits %q, want %q", cp.Plan.Splits, plan.Splits)
	}
	for i, v := range cp.Plan.Splits {
		if !v.Equal(plan.Splits[i]) {
			t.Errorf("split %d read back as %q (%s), written %q", i, v.Str, v.Kind, plan.Splits[i].Str)
		}
	}
	// a value of every kind keeps its number and text
	vals := []pipeline.Value{pipeline.Int(-7), pipeline.Float(-0.5), pipeline.Bool(true), pipeline.Text("é,x"),
		pipeline.DecimalUnscaled("-1.50", -150, 2), pipeline.Null}
	if err := saveCheckpoint(ctx, st, &pipeline.Checkpoint{Plan: pipeline.RegionPlan{Type: pipeline.TypeVarchar, Splits: vals}}); err != nil {
		t.Fatal(err)
	}
	if cp, err = ReadCheckpoint(ctx, st); err != nil {
		t.Fatal(err)
	}
	for i, v := range cp.Plan.Splits {
		if v != vals[i] {
			t.Errorf("value %d read back as %+v, written %+v", i, v, vals[i])
		}
	}
}

// A checkpoint written by another rekey (a newer one, with a field this one does not know, or
// another format version) is refused naming what it does not read: resumed as far as this rekey
// understands it, a setting the run began with would be dropped without a word.
func TestResumeRefusesACheckpointOfAnotherVersion(t *testing.T) {
	for name, c := range map[string]struct{ from, to, want string }{
		"unknown field":   {`"version": 1,`, `"version": 1, "compression": "lz4",`, `"compression"`},
		"unknown in file": {`"region": 0,`, `"region": 0, "crc": 7,`, `"crc"`},
		"newer version":   {`"version": 1,`, `"version": 2,`, "version 2"},
	} {
		t.Run(name, func(t *testing.T) {
			cfg := jobConfig(t, nil)
			interruptedRun(t, cfg)
			editCheckpoint(t, cfg, func(s string) string { return strings.Replace(s, c.from, c.to, 1) })
			o, err := openResume(cfg, nil)
			if err == nil {
				o.Close()
				t.Fatal("resume accepted a checkpoint of another rekey version")
			}
			if !errors.Is(err, ErrRefusedResume) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "another rekey version") {
				t.Fatalf("error %q does not say %s is another rekey version's", err, c.want)
			}
		})
	}
}

// A checkpoint changed since rekey wrote it (edited by hand: its streams' cursors, counts or
// plan) is refused: resumed, a cursor moved back wrote rows twice, a plan edited routed the rest
// of the rows to other regions than the rows already written. A checkpoint of an earlier rekey,
// which carries no digest, still resumes, and so does the checkpoint as written.
func TestResumeRefusesAnEditedCheckpoint(t *testing.T) {
	for name, edit := range map[string]func(string) string{
		"count": func(s string) string { return regexp.MustCompile(`"rows_in": \d+`).ReplaceAllString(s, `"rows_in": 7`) },
		"complete": func(s string) string {
			return strings.Replace(s, `"complete": false`, `"complete": true`, 1)
		},
		"streams": func(s string) string {
			return regexp.MustCompile(`(?s)"streams": \{.*?\n  \}`).ReplaceAllString(s, `"streams": {}`)
		},
		"reformatted": func(s string) string { return strings.ReplaceAll(s, "\n  ", "\n\t") },
	} {
		t.Run(name, func(t *testing.T) {
			cfg := jobConfig(t, nil)
			interruptedRun(t, cfg)
			editCheckpoint(t, cfg, edit)
			o, err := openResume(cfg, nil)
			if err == nil {
				o.Close()
				t.Fatal("resume accepted a checkpoint edited by hand")
			}
			if !errors.Is(err, ErrRefusedResume) || !strings.Contains(err.Error(), "changed since rekey wrote it") {
				t.Fatalf("error %q does not say the checkpoint was changed", err)
			}
		})
	}
	t.Run("as written, and without a digest", func(t *testing.T) {
		cfg := jobConfig(t, nil)
		interruptedRun(t, cfg)
		o, err := openResume(cfg, nil)
		if err != nil {
			t.Fatalf("the checkpoint as written must resume: %v", err)
		}
		o.Close()
		editCheckpoint(t, cfg, func(s string) string {
			return regexp.MustCompile(`,\n  "digest": "[0-9a-f]+"`).ReplaceAllString(s, "")
		})
		if o, err = openResume(cfg, nil); err != nil {
			t.Fatalf("a checkpoint without a digest (an earlier rekey's) must resume: %v", err)
		}
		o.Close()
	})
}

// editCheckpoint rewrites the output's checkpoint through edit, which must change it.
func editCheckpoint(t *testing.T, cfg testCfg, edit func(string) string) {
	t.Helper()
	path := filepath.Join(cfg.OutDir, CheckpointFile)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	edited := edit(string(data))
	if edited == string(data) {
		t.Fatalf("the edit changed nothing in %s", data)
	}
	if err := os.WriteFile(path, []byte(edited), 0o600); err != nil {
		t.Fatal(err)
	}
}
