package replicate

import (
	"context"
	"errors"
	"fmt"

	"go.uber.org/zap"

	"github.com/rekey/rekey/output"
	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/source/kafka"
	"github.com/rekey/rekey/store"
	"github.com/rekey/rekey/transform"
)

// PlanRequest asks for the region plan of an output of files.
type PlanRequest struct {
	Store   store.Store
	Out     string // the output as the user named it, for messages
	Kafka   kafka.Config
	Program *transform.Program
	Regions int // a region count that overrides the mapping's at the first start; 0: the mapping's
	Logger  *zap.Logger
	// Sample places a plan that needs a sample of the data from src (the topic's retained
	// messages).
	Sample func(ctx context.Context, src pipeline.Source) (pipeline.RegionPlan, error)
}

// PlanStep is the step of Plan that failed.
type PlanStep int

const (
	StepState  PlanStep = iota + 1 // reading the output's replicate.json
	StepOutput                     // the output holds something other than a replication
	StepSource                     // opening the topic for a sample
	StepSample                     // sampling and placing the plan
	StepFlags                      // a flag the output's plan overrides
)

// PlanError is a failure of Plan: the error of its step, unchanged, and the step.
type PlanError struct {
	Step PlanStep
	Err  error
}

func (e *PlanError) Error() string { return e.Err.Error() }
func (e *PlanError) Unwrap() error { return e.Err }

// Plan is the output's plan when it has one (the plan never changes for an output), else the
// mapping's, placed from a sample of the retained messages when the strategy needs one.
func Plan(ctx context.Context, req PlanRequest) (pipeline.RegionPlan, error) {
	st, err := LoadStateFrom(ctx, req.Store)
	if errors.Is(err, errOtherVersion) {
		return pipeline.RegionPlan{}, &PlanError{StepOutput, err}
	} else if err != nil {
		return pipeline.RegionPlan{}, &PlanError{StepState, err}
	}
	if st != nil {
		if req.Regions > 0 && req.Regions != st.Plan.Count() {
			// the table is split once: the plan of the first start stays for the output's life
			return pipeline.RegionPlan{}, &PlanError{StepFlags, fmt.Errorf("--regions %d does not apply: %s keeps the plan of its first start (%d regions, %s); leave --regions out or give %d, or replicate into a new --out",
				req.Regions, req.Out, st.Plan.Count(), st.Plan.Strategy, st.Plan.Count())}
		}
		return st.Plan, nil
	}
	// before a sample of the topic: a folder holding a migration is refused at once
	if err := output.CheckReplicationOutput(ctx, req.Store, req.Out); err != nil {
		return pipeline.RegionPlan{}, &PlanError{StepOutput, err}
	}
	// count, split_keys, hash-prefix and bucket plans need no sample; quantile plans and
	// regions.size (a count from the data size) are placed from the retained messages
	p := req.Program
	if plan, err := p.PlanRegions(transform.RegionRequest{Count: req.Regions}); err == nil &&
		(plan.Strategy != "single" || p.RegionSize() == transform.DefaultRegionSize) {
		return plan, nil
	}
	wcfg := req.Kafka
	wcfg.Start, wcfg.Max = kafka.StartEarliest, 0
	win, err := kafka.NewWindow(ctx, wcfg, p.Source(), req.Logger.Named("source.kafka"))
	if err != nil {
		return pipeline.RegionPlan{}, &PlanError{StepSource, err}
	}
	plan, err := req.Sample(ctx, win)
	if err != nil {
		return pipeline.RegionPlan{}, &PlanError{StepSample, err}
	}
	return plan, nil
}
