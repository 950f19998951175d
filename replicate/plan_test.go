package replicate

import (
	"context"
	"errors"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/store"
)

// An output's region plan is fixed at its first start: a --regions that differs from it does
// not apply, and is refused (it used to be logged and ignored, so the user believed the table
// split into the regions asked for).
func TestPlanRefusesRegionsOtherThanTheOutputs(t *testing.T) {
	ctx := context.Background()
	st, err := store.NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	plan := pipeline.RegionPlan{Type: pipeline.TypeVarchar, Strategy: "hex_prefix",
		Splits: []pipeline.Value{pipeline.Text("4"), pipeline.Text("8"), pipeline.Text("c")}}
	if err := (&State{Plan: plan}).save(ctx, st); err != nil {
		t.Fatal(err)
	}
	for _, regions := range []int{0, 4} { // not given, or the output's own count
		got, err := Plan(ctx, PlanRequest{Store: st, Regions: regions, Logger: zap.NewNop()})
		if err != nil || got.Count() != 4 {
			t.Fatalf("--regions %d: plan of %d regions, error %v; want the output's 4", regions, got.Count(), err)
		}
	}
	_, err = Plan(ctx, PlanRequest{Store: st, Regions: 8, Logger: zap.NewNop()})
	var pe *PlanError
	if !errors.As(err, &pe) || pe.Step != StepFlags || !strings.Contains(err.Error(), "--regions 8") || !strings.Contains(err.Error(), "4 regions") {
		t.Fatalf("--regions 8 over an output of 4 regions: %v, want a refusal naming both", err)
	}
}
