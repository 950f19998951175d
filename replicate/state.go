package replicate

import (
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/rekey/rekey/pipeline"
)

// StateFile records what an output directory replicates: the mapping's fingerprint, the region
// plan (fixed for the directory's life: the table is pre-split once, and a replay must route a
// message to the same region), the topic, the consumer group (whose members all write there)
// and formats.
const StateFile = "replicate.json"

// State is the content of replicate.json.
type State struct {
	Version     int                 `json:"version"`
	Fingerprint string              `json:"mapping_fingerprint"`
	Table       string              `json:"table"`
	Topic       string              `json:"topic"`
	Group       string              `json:"group"`
	Message     string              `json:"message_format"`
	FileFormat  string              `json:"file_format"`
	Plan        pipeline.RegionPlan `json:"plan"`
	Splits      []pipeline.Value    `json:"splits"`
	CreatedAt   time.Time           `json:"created_at"`
}

// LoadState reads dir's replicate.json; (nil, nil) when there is none.
func LoadState(dir string) (*State, error) {
	var s State
	if ok, err := pipeline.ReadJSON(filepath.Join(dir, StateFile), StateFile, &s); !ok {
		return nil, err
	}
	s.Plan.Splits = s.Splits
	return &s, nil
}

func (s *State) save(dir string) error {
	s.Version = 1
	s.Splits = s.Plan.Splits
	return pipeline.WriteJSONAtomic(filepath.Join(dir, StateFile), s)
}

// check refuses to continue a directory with another mapping, plan, topic or file format.
func (s *State) check(cfg *Config) error {
	var errs []error
	if s.Fingerprint != cfg.Program.Fingerprint() {
		errs = append(errs, fmt.Errorf("it was written with a different mapping (fingerprint %.12s, now %.12s)", s.Fingerprint, cfg.Program.Fingerprint()))
	}
	if s.Topic != cfg.Kafka.Topic {
		errs = append(errs, fmt.Errorf("it replicates topic %s, not %s", s.Topic, cfg.Kafka.Topic))
	}
	if s.Group != cfg.Kafka.Group {
		// the members of one group share a folder; another group reads every partition again
		errs = append(errs, fmt.Errorf("it is the output of consumer group %s, not %s (the members of one group share one --out; another group needs its own)", s.Group, cfg.Kafka.Group))
	}
	if s.FileFormat != cfg.Format.Name() {
		errs = append(errs, fmt.Errorf("it holds %s files, not %s", s.FileFormat, cfg.Format.Name()))
	}
	if !samePlan(s.Plan, cfg.Plan) {
		errs = append(errs, fmt.Errorf("its region plan (%d regions, %s) differs from this one (%d regions, %s): the plan is fixed for a directory", s.Plan.Count(), s.Plan.Strategy, cfg.Plan.Count(), cfg.Plan.Strategy))
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s: %w; use a new --out directory (or the same mapping and options)", cfg.OutDir, errors.Join(errs...))
	}
	return nil
}

func samePlan(a, b pipeline.RegionPlan) bool {
	if a.Type != b.Type || a.Desc != b.Desc || len(a.Splits) != len(b.Splits) {
		return false
	}
	for i := range a.Splits {
		if pipeline.Compare(a.Type, a.Splits[i], b.Splits[i]) != 0 {
			return false
		}
	}
	return true
}
