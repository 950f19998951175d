package replicate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/rekey/rekey/output"
	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/store"
	"github.com/rekey/rekey/transform"
)

// State is the content of replicate.json (output.ReplicateStateFile): what an output replicates,
// the mapping's fingerprint, the region plan (fixed for the output's life: the table is
// pre-split once, and a replay must route a message to the same region), the topic, the
// consumer group (whose members all write there) and formats.
type State struct {
	Version     int    `json:"version"`
	Fingerprint string `json:"mapping_fingerprint"`
	Table       string `json:"table"`
	Topic       string `json:"topic"`
	Group       string `json:"group"`
	Message     string `json:"message_format"`
	// KeyColumn is keycol=, the column a plain message key fills ("": none); nil in the state
	// of an earlier rekey, which did not record it
	KeyColumn  *string             `json:"key_column,omitempty"`
	FileFormat string              `json:"file_format"`
	Plan       pipeline.RegionPlan `json:"plan"`
	Splits     []pipeline.Value    `json:"splits"`
	CreatedAt  time.Time           `json:"created_at"`
}

// LoadStateFrom reads the output's replicate.json; (nil, nil) when there is none.
func LoadStateFrom(ctx context.Context, st store.Store) (*State, error) {
	var s State
	if ok, err := getJSON(ctx, st, output.ReplicateStateFile, &s); !ok {
		return nil, err
	}
	if err := s.sameVersion(ctx, st); err != nil {
		return nil, err
	}
	s.Plan.Splits = s.Splits
	return &s, nil
}

// stateVersion is the version of replicate.json's format this rekey writes and reads.
const stateVersion = 1

// sameVersion refuses a replicate.json another rekey version wrote: a newer format, or a field
// this rekey does not know (a setting the output is fixed to, which it would drop without a word).
func (s *State) sameVersion(ctx context.Context, st store.Store) error {
	var why string
	if s.Version > stateVersion {
		why = fmt.Sprintf("format version %d; this rekey reads version %d", s.Version, stateVersion)
	} else if data, err := st.Get(ctx, output.ReplicateStateFile); err != nil {
		return fmt.Errorf("read %s: %w", output.ReplicateStateFile, err)
	} else {
		strict := json.NewDecoder(bytes.NewReader(data))
		strict.DisallowUnknownFields()
		field, ok := strings.CutPrefix(fmt.Sprint(strict.Decode(new(State))), "json: unknown field ")
		if !ok {
			return nil
		}
		why = "it holds the field " + field + ", which this rekey does not know"
	}
	return fmt.Errorf("%s was %w (%s): replicate into this output with the rekey that began it, or into a new --out directory",
		st.Location(output.ReplicateStateFile), errOtherVersion, why)
}

// errOtherVersion is wrapped by the error of a replicate.json another rekey version wrote: no
// retry reads it, so it is a refusal of the output, not a failure.
var errOtherVersion = errors.New("written by another rekey version")

func (s *State) save(ctx context.Context, st store.Store) error {
	s.Version = stateVersion
	s.Splits = s.Plan.Splits
	return putJSON(ctx, st, output.ReplicateStateFile, s)
}

// getJSON reads the JSON object name of st into v; false, with no error, when there is none.
func getJSON(ctx context.Context, st store.Store, name string, v any) (bool, error) {
	data, err := st.Get(ctx, name)
	if store.IsNotExist(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read %s: %w", name, err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		return false, fmt.Errorf("%s is damaged: %w", st.Location(name), err)
	}
	return true, nil
}

// putJSON writes v as indented JSON (and a newline) to name atomically and durably.
func putJSON(ctx context.Context, st store.Store, name string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", name, err)
	}
	if err := st.Put(ctx, name, append(data, '\n')); err != nil {
		return fmt.Errorf("write %s: %w", st.Location(name), err)
	}
	return nil
}

// check refuses to continue a directory with another mapping, plan, topic, message format or file
// format.
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
	if s.Message != "" && s.Message != cfg.Kafka.Format {
		// the committed rolls read the topic's messages in the first format: read otherwise,
		// the same topic's changes would be decoded two ways in one output
		errs = append(errs, fmt.Errorf("it reads messages as %s, not %s", s.Message, cfg.Kafka.Format))
	}
	if s.KeyColumn != nil && *s.KeyColumn != cfg.Kafka.KeyColumn {
		// the committed rolls filled that column from the messages' plain keys (or did not)
		errs = append(errs, fmt.Errorf("it reads the messages' plain keys with keycol=%s, not keycol=%s", *s.KeyColumn, cfg.Kafka.KeyColumn))
	}
	if s.FileFormat != cfg.Format.Name() {
		errs = append(errs, fmt.Errorf("it holds %s files, not %s", s.FileFormat, cfg.Format.Name()))
	}
	if !samePlan(s.Plan, cfg.Plan) {
		errs = append(errs, fmt.Errorf("its region plan (%d regions, %s) differs from this one (%d regions, %s): the plan is fixed for a directory", s.Plan.Count(), s.Plan.Strategy, cfg.Plan.Count(), cfg.Plan.Strategy))
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s: %w; use a new --out directory (or the same mapping and options)", cfg.Out, errors.Join(errs...))
	}
	return nil
}

// sampledPlan tells whether plan was placed from a sample of the data (quantile split keys, or a
// region count from the data's size), which members sampling the topic at different moments
// place differently.
func sampledPlan(p *transform.Program, plan pipeline.RegionPlan) bool {
	return plan.Strategy == "quantile" || p.PlanNeedsSample(0)
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
