// Package replicate is rekey's continuous replication from Kafka: a consumer-group member that
// rewrites every message's key with the mapping, writes region-split bulk-load files and DELETE
// statements in rolls, and commits Kafka offsets only once the files holding those messages are
// durable.
//
// Design:
//
//   - Each assigned partition is read on its own pipeline.Engine: its source
//     (source/kafka.PartitionSource) fetches it in offset order and decodes the messages
//     (source/kafka.Decoder); the engine's one worker applies the mapping (transform.Evaluator)
//     and appends rows to the partition's current roll: one segment per region, each with an
//     upsert file in the table format and a file of DELETE statements.
//   - A roll closes when its files reach RollSize or RollInterval after it opened, whichever
//     comes first (the engine's cut, which the roll schedules as it opens: the interval fires on
//     an idle topic too), and on rebalance and shutdown. Closing: finish every file (footer,
//     fsync) under a temporary name, including the roll's rejects file; then, under the
//     folder's lock, rename them, fsync the folders and rewrite manifest.json, which is the
//     roll's commit point (its files listed, its messages counted once per partition); last,
//     commit the offset after the roll's last message to Kafka.
//   - manifest.json records each partition's next offset (after its last committed roll). A
//     partition's new owner removes what an uncommitted roll of the partition left (temporary
//     files, renamed files the manifest does not list) and reads from that next offset when it is
//     past the group's: a committed roll is never replayed, an uncommitted one is replayed
//     whole. File names derive from (partition, first offset, roll's last offset).
//   - The members of a consumer group share one output folder: a partition's files are written
//     only by the member Kafka assigns it to, and manifest.json is read, changed and rewritten
//     under a lock file (flock).
//   - Deletes (tombstones, Debezium "d", an update that moves a row to a new key) are DELETE
//     statements in the segment's .sql file, applied after its upserts. An upsert of a key that
//     was deleted earlier in the same segment starts a new segment for that region, so "upserts,
//     then deletes" per segment always equals the message order.
//   - Rebalances use kafka-go's ConsumerGroup/Generation API directly: when a generation ends,
//     every worker closes its roll and commits through that generation before the next join, so
//     partitions move to another member without loss (and with no replay of committed rolls).
package replicate

import (
	"errors"
	"fmt"
	"time"

	kafkago "github.com/segmentio/kafka-go"
	"go.uber.org/zap"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/sink/files"
	"github.com/rekey/rekey/sink/lindorm"
	"github.com/rekey/rekey/sink/sqlsink"
	"github.com/rekey/rekey/source/kafka"
	"github.com/rekey/rekey/store"
	"github.com/rekey/rekey/transform"
)

// Defaults.
const (
	DefaultRollSize     = 64 << 20
	DefaultRollInterval = time.Minute
	DefaultMemory       = 128 << 20
)

// Config wires one replicator.
type Config struct {
	Kafka   kafka.Config // brokers, topic, group (required), format, security
	Program *transform.Program
	// Plan is the region plan. It must stay the same for the life of the output directory:
	// SaveState records it and New refuses a different one.
	Plan   pipeline.RegionPlan
	Format files.Format
	// Store is the output: a local folder (store.Local), which the members of the group share
	// (locally, or mounted), or an object store's prefix (s3://, oss://), which has one member of
	// the group (its lock, the object .rekey.lock, refuses a second). See output.CommitLock.
	Store store.Store
	// Out names the output in messages and bulkload.json (default Store.Location("")).
	Out string
	// SpoolDir holds a roll's files on local disk until they are uploaded to an object store
	// (default os.TempDir()): about --roll-size per assigned partition.
	SpoolDir string
	// Job names the LTS data sources and namespace of bulkload.json (Format, Out and Regions
	// are filled in from the fields above).
	Job lindorm.JobOptions

	// RollSize closes a partition's roll when its files (all regions together) reach this
	// many bytes, estimated from the compression seen so far. Default 64 MiB.
	RollSize int64
	// RollInterval closes a roll this long after its first message, even if no message
	// arrives afterwards. Default 1 minute.
	RollInterval time.Duration
	// Memory bounds the rows buffered in all open segments (encoded chunks are written as
	// the budget fills). Default 128 MiB.
	Memory int64

	Group GroupOptions

	// AcceptGaps lets a partition continue at its earliest available offset when the messages
	// from its committed offset on were deleted (retention) before they were read: the gap is
	// logged at Warn, counted (rekey_gap_messages_total) and recorded in manifest.json. Without
	// it a gap stops the replication with an error (those messages are lost to the table).
	AcceptGaps bool

	// RegionSize flags regions over this size in the manifest (default Program.RegionSize()).
	RegionSize int64
	Version    string // rekey's version, for the manifest
	Logger     *zap.Logger

	// Hooks inject faults in tests: a non-nil error from a hook fails the run there, as a crash
	// would (nothing more is committed).
	Hooks Hooks

	// SQL, when its Target is set, makes the replicator apply every change to that table through
	// SQL (lindorm:// or mysql://) instead of writing files: Store is then a local state folder
	// for the rejects, Format and the roll settings are not used, and offsets are committed after
	// each fetched batch's statements succeeded (see sqlworker.go).
	SQL sqlsink.Config
}

// GroupOptions tune the consumer group; zero values take kafka-go's defaults.
type GroupOptions struct {
	SessionTimeout    time.Duration // default 30s
	HeartbeatInterval time.Duration // default 3s
	RebalanceTimeout  time.Duration // default 60s: the time a member gets to close its rolls
	JoinBackoff       time.Duration // default 1s
	// LeaveTimeout bounds how long a stop waits for kafka-go to leave the group (default 5s):
	// its Close waits for a join in progress, which a killed member in the group can hold
	// for the whole rebalance timeout. Not waiting is safe: offsets are committed only after
	// durable output, and the broker drops the member after its session timeout.
	LeaveTimeout time.Duration
	// StartOffset is where partitions without a committed offset start: kafkago.FirstOffset
	// (default) or kafkago.LastOffset.
	StartOffset int64
}

// Hooks are called by a partition's worker while it closes a roll, or, into a SQL table, around
// a batch (StepApplying, StepApplied, then StepOffset; first and last are the batch's offsets);
// Joined by the member as it receives a generation.
type Hooks struct {
	// Commit runs at each step of a roll's commit. A non-nil error stops the process there as
	// a kill would: nothing more is committed, and no file is removed.
	Commit func(step CommitStep, partition int, first, last int64) error
	// Statement runs after each statement into a SQL table that succeeded, from the connection
	// that ran it (concurrently): the other statements of its batch may not have run yet, and
	// its offset is not committed. A fault test kills the process there.
	Statement func()
	// Joined runs as the member receives a generation from the group, before it claims the
	// partitions assigned (removes what an earlier owner left of them). A test holds it there
	// while the group moves on to the next generation.
	Joined func(generation int32, partitions []int)
}

// CommitStep is a point in a roll's commit.
type CommitStep string

// The steps of a roll's commit, in order.
const (
	StepFinished CommitStep = "finished" // every file finished and fsynced under its temporary name
	StepStaging  CommitStep = "staging"  // after each file is staged: on an object store uploaded (files uploaded in part); manifest.json not rewritten
	StepStaged   CommitStep = "staged"   // every file staged (on an object store uploaded); manifest.json not rewritten
	StepManifest CommitStep = "manifest" // manifest.json lists the roll: it is committed; on a folder its files keep their temporary names
	StepRenaming CommitStep = "renaming" // on a folder, after each file's rename to its final name (files renamed in part)
	StepRenamed  CommitStep = "renamed"  // every file under its final name, the folders fsynced; the Kafka offset not committed
	StepOffset   CommitStep = "offset"   // the Kafka offset after the roll is committed

	// StepApplying: into a SQL table, a batch's statements are about to run.
	StepApplying CommitStep = "applying"
	// StepApplied: into a SQL table, every statement of a batch succeeded and its rejects are
	// durable; the Kafka offset after it is not committed (a crash replays the batch).
	StepApplied CommitStep = "applied"
)

// Validate checks the configuration and fills in defaults.
func (c *Config) Validate() error {
	errs := c.check()
	c.fillDefaults()
	if err := c.Group.fillDefaults(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// check lists what is missing or wrong in the fields a caller must give; none of it depends on
// a default.
func (c *Config) check() []error {
	var errs []error
	if err := c.Kafka.Validate(); err != nil {
		errs = append(errs, err)
	}
	if c.Kafka.Group == "" {
		errs = append(errs, errors.New("replicate: a consumer group is required (kafka://.../TOPIC?group=NAME)"))
	}
	if c.Program == nil {
		errs = append(errs, errors.New("replicate: no mapping"))
	}
	if c.Format == nil && c.SQL.Target == nil {
		errs = append(errs, errors.New("replicate: no file format"))
	}
	if c.Store == nil {
		errs = append(errs, errors.New("replicate: no output directory"))
	}
	if c.RollSize < 0 || c.RollInterval < 0 || c.Memory < 0 {
		errs = append(errs, errors.New("replicate: roll size, roll interval and memory must not be negative"))
	}
	if c.Program != nil {
		if t := c.Program.Target(); c.Plan.Count() > 1 && c.Plan.Type != t.Columns[0].Type {
			errs = append(errs, fmt.Errorf("replicate: region plan typed %s, first key column %s is %s", c.Plan.Type, t.Columns[0].Name, t.Columns[0].Type))
		}
	}
	return errs
}

// fillDefaults sets the zero fields that have a default.
func (c *Config) fillDefaults() {
	if c.Store != nil && c.Out == "" {
		c.Out = c.Store.Location("")
	}
	if c.RollSize == 0 {
		c.RollSize = DefaultRollSize
	}
	if c.RollInterval == 0 {
		c.RollInterval = DefaultRollInterval
	}
	if c.Memory == 0 {
		c.Memory = DefaultMemory
	}
	if c.Program != nil && c.RegionSize == 0 {
		c.RegionSize = c.Program.RegionSize()
	}
	if c.Logger == nil {
		c.Logger = zap.NewNop()
	}
}

// fillDefaults sets the zero timeouts to kafka-go's defaults (StartOffset to FirstOffset) and
// refuses a StartOffset kafka-go does not know.
func (g *GroupOptions) fillDefaults() error {
	if g.SessionTimeout == 0 {
		g.SessionTimeout = 30 * time.Second
	}
	if g.HeartbeatInterval == 0 {
		g.HeartbeatInterval = 3 * time.Second
	}
	if g.RebalanceTimeout == 0 {
		g.RebalanceTimeout = 60 * time.Second
	}
	if g.JoinBackoff == 0 {
		g.JoinBackoff = time.Second
	}
	if g.LeaveTimeout == 0 {
		g.LeaveTimeout = 5 * time.Second
	}
	if g.StartOffset == 0 {
		g.StartOffset = kafkago.FirstOffset
	}
	if g.StartOffset != kafkago.FirstOffset && g.StartOffset != kafkago.LastOffset {
		return errors.New("replicate: StartOffset must be kafka-go's FirstOffset or LastOffset")
	}
	return nil
}
