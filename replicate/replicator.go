package replicate

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	kafkago "github.com/segmentio/kafka-go"
	"go.uber.org/zap"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/sink/lindorm"
	"github.com/rekey/rekey/source/kafka"
)

// Replicator is one member of the consumer group. Metrics may be read while Run is in progress.
type Replicator struct {
	cfg     Config
	log     *zap.Logger
	target  pipeline.TargetSchema
	dstmt   *deleteStmt
	dialer  *kafkago.Dialer
	metrics *Metrics
	rejects *pipeline.RejectLog
	man     *manifest

	rawWritten   atomic.Int64 // buffered bytes encoded into files, for the size estimate
	bytesEncoded atomic.Int64 // file bytes they became

	priorMu sync.Mutex
	prior   map[int]map[int64]int64 // partition -> first offset -> roll's last offset, from files on disk
}

// New validates cfg and prepares the output directory: replicate.json (created, or checked
// against cfg), ddl.sql and bulkload.json, leftover temporary files removed, the manifest of an
// earlier process loaded to be continued.
func New(cfg Config) (*Replicator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if _, err := kafka.NewDecoder(cfg.Kafka, cfg.Program.Source()); err != nil {
		return nil, err
	}
	dialer, err := cfg.Kafka.Dialer()
	if err != nil {
		return nil, err
	}
	r := &Replicator{cfg: cfg, log: cfg.Logger, target: cfg.Program.Target(), dialer: dialer, metrics: newMetrics()}
	r.dstmt = newDeleteStmt(r.target)
	if err := os.MkdirAll(cfg.OutDir, 0o755); err != nil {
		return nil, fmt.Errorf("create output directory: %w", err)
	}
	st, err := LoadState(cfg.OutDir)
	if err != nil {
		return nil, err
	}
	if st != nil {
		if err := st.check(&r.cfg); err != nil {
			return nil, err
		}
	} else {
		st = &State{Fingerprint: cfg.Program.Fingerprint(), Table: r.target.Table, Topic: cfg.Kafka.Topic, Group: cfg.Kafka.Group,
			Message: cfg.Kafka.Format, FileFormat: cfg.Format.Name(), Plan: cfg.Plan, CreatedAt: time.Now().UTC()}
		if err := st.save(cfg.OutDir); err != nil {
			return nil, err
		}
	}
	if err := lindorm.WriteDDL(cfg.OutDir, lindorm.DDL(r.target, cfg.Plan, cfg.Program.Options())); err != nil {
		return nil, err
	}
	job, err := lindorm.BulkloadConfig(r.target, cfg.Format.Name(), cfg.OutDir)
	if err != nil {
		return nil, err
	}
	if err := lindorm.WriteBulkloadConfig(cfg.OutDir, job); err != nil {
		return nil, err
	}
	if err := r.scan(); err != nil {
		return nil, err
	}
	r.man, err = loadManifest(cfg.OutDir, r.baseManifest, Replication{Topic: cfg.Kafka.Topic, Group: cfg.Kafka.Group, Format: cfg.Kafka.Format})
	if err != nil {
		return nil, err
	}
	if err := r.man.write(0, 0, 0); err != nil { // a directory describes itself from the start
		return nil, err
	}
	if r.rejects, err = pipeline.OpenRejectLog(filepath.Join(cfg.OutDir, pipeline.RejectsFile), -1, nil); err != nil {
		return nil, err
	}
	return r, nil
}

func (r *Replicator) baseManifest() *lindorm.Manifest {
	m := lindorm.NewManifest(r.target, r.cfg.Plan, r.cfg.Format.Name(), r.cfg.RegionSize)
	m.Mapping = r.cfg.Program.Name()
	m.MappingFingerprint = r.cfg.Program.Fingerprint()
	m.RekeyVersion = r.cfg.Version
	return m
}

// scan removes temporary files an interrupted process left in the region folders and records
// the rolls already on disk (their names give each roll's offsets), so that a replay ends its
// rolls where the interrupted process did and rewrites identical files.
func (r *Replicator) scan() error {
	r.prior = map[int]map[int64]int64{}
	for i := 0; i < r.cfg.Plan.Count(); i++ {
		dir := filepath.Join(r.cfg.OutDir, pipeline.RegionDir(i))
		ents, err := os.ReadDir(dir)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("list %s: %w", dir, err)
		}
		for _, e := range ents {
			name := e.Name()
			if pipeline.IsTemp(name) {
				if err := os.Remove(filepath.Join(dir, name)); err != nil {
					return fmt.Errorf("remove leftover %s: %w", name, err)
				}
				continue
			}
			p, first, last, ok := ParseSegmentName(name)
			if !ok {
				continue
			}
			if r.prior[p] == nil {
				r.prior[p] = map[int64]int64{}
			}
			// segments split inside a roll start later but end with the same roll: keep the
			// end by every first offset; the roll's own first offset is what a replay meets
			r.prior[p][first] = last
		}
	}
	return nil
}

// priorEnd returns the last offset of a roll an earlier process started at first, if any.
func (r *Replicator) priorEnd(partition int, first int64) (int64, bool) {
	r.priorMu.Lock()
	defer r.priorMu.Unlock()
	last, ok := r.prior[partition][first]
	return last, ok
}

func (r *Replicator) notePrior(partition int, first, last int64) {
	r.priorMu.Lock()
	defer r.priorMu.Unlock()
	if r.prior[partition] == nil {
		r.prior[partition] = map[int64]int64{}
	}
	r.prior[partition][first] = last
}

// Metrics returns the live figures.
func (r *Replicator) Metrics() *Metrics { return r.metrics }

func (r *Replicator) unhealthyAfter() time.Duration {
	return 2*r.cfg.Group.SessionTimeout + r.cfg.Group.RebalanceTimeout
}

func (r *Replicator) noteRatio(raw, written int64) {
	r.rawWritten.Add(raw)
	r.bytesEncoded.Add(written)
}

// ratio is file bytes per buffered byte seen so far (1 until a few MiB were encoded).
func (r *Replicator) ratio() float64 {
	raw := r.rawWritten.Load()
	if raw < 4<<20 {
		return 1
	}
	return math.Max(float64(r.bytesEncoded.Load())/float64(raw), 0.001)
}

// Run joins the group and replicates until stop is closed (every open roll is closed, committed
// and its offsets committed; Run returns nil) or ctx is cancelled (a hard stop: nothing more is
// committed, temporary files are removed) or a worker fails (its error).
func (r *Replicator) Run(ctx context.Context, stop <-chan struct{}) error {
	defer r.rejects.Close()
	unlock, err := lockDir(r.cfg.OutDir)
	if err != nil {
		return err
	}
	defer unlock()
	log := r.log
	g := r.cfg.Group
	var cg *kafkago.ConsumerGroup
	cg, err = kafkago.NewConsumerGroup(kafkago.ConsumerGroupConfig{
		ID:                     r.cfg.Kafka.Group,
		Brokers:                r.cfg.Kafka.Brokers,
		Dialer:                 r.dialer,
		Topics:                 []string{r.cfg.Kafka.Topic},
		HeartbeatInterval:      g.HeartbeatInterval,
		SessionTimeout:         g.SessionTimeout,
		RebalanceTimeout:       g.RebalanceTimeout,
		JoinGroupBackoff:       g.JoinBackoff,
		StartOffset:            g.StartOffset,
		Timeout:                10 * time.Second,
		WatchPartitionChanges:  true,
		PartitionWatchInterval: 5 * time.Second,
		ErrorLogger:            kafkago.LoggerFunc(func(f string, a ...any) { log.Debug("kafka-go: " + strings.TrimSpace(fmt.Sprintf(f, a...))) }),
	})
	if err != nil {
		return fmt.Errorf("consumer group: %w", err)
	}
	defer cg.Close()
	// Next blocks while joining: stop and ctx must interrupt it
	nextCtx, cancelNext := context.WithCancel(ctx)
	defer cancelNext()
	go func() {
		select {
		case <-stop:
			cancelNext()
		case <-nextCtx.Done():
		}
	}()
	r.metrics.setState("joining")
	log.Info("joining consumer group", zap.String("group", r.cfg.Kafka.Group), zap.String("topic", r.cfg.Kafka.Topic))
	var lastErr string
	for {
		gen, err := cg.Next(nextCtx)
		if err != nil {
			if nextCtx.Err() != nil || errors.Is(err, kafkago.ErrGroupClosed) {
				break
			}
			if msg := err.Error(); msg != lastErr {
				log.Warn("consumer group: retrying", zap.Error(err))
				lastErr = msg
			}
			continue
		}
		lastErr = ""
		r.metrics.Rebalances.Add(1)
		if err := r.generation(ctx, stop, gen); err != nil {
			r.metrics.setState("failed")
			return err
		}
		if isClosed(stop) || ctx.Err() != nil {
			break
		}
		r.metrics.setState("joining")
	}
	if ctx.Err() != nil {
		r.metrics.setState("failed")
		return ctx.Err()
	}
	r.metrics.setState("stopped")
	log.Info("replication stopped: rolls committed, offsets committed, group left")
	return nil
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// generation runs one worker per assigned partition until the generation ends (a rebalance),
// stop is closed or a worker fails; each worker closes its roll and commits its offset through
// this generation before the function returns and kafka-go may join the next one.
func (r *Replicator) generation(ctx context.Context, stop <-chan struct{}, gen *kafkago.Generation) error {
	assigned := gen.Assignments[r.cfg.Kafka.Topic]
	parts := make([]int, 0, len(assigned))
	for _, a := range assigned {
		parts = append(parts, a.ID)
	}
	r.log.Info("generation joined", zap.Int32("generation", gen.ID), zap.Ints("partitions", parts))
	r.metrics.setState("consuming")
	var commitMu sync.Mutex
	commit := func(partition int, offset int64) error {
		commitMu.Lock()
		defer commitMu.Unlock()
		return gen.CommitOffsets(map[string]map[int]int64{r.cfg.Kafka.Topic: {partition: offset}})
	}
	done := make(chan error, 1)
	gen.Start(func(gctx context.Context) {
		wctx, cancel := context.WithCancelCause(ctx)
		defer cancel(nil)
		go func() {
			select {
			case <-gctx.Done():
				cancel(errGenerationEnded)
			case <-stop:
				cancel(errStop)
			case <-wctx.Done():
			}
		}()
		var wg sync.WaitGroup
		var failed atomic.Pointer[error]
		for _, a := range assigned {
			wg.Add(1)
			go func() {
				defer wg.Done()
				w := r.newWorker(a.ID, commit, len(assigned))
				if err := w.run(wctx, ctx, a.Offset); err != nil {
					if failed.CompareAndSwap(nil, &err) {
						cancel(err)
					}
				}
			}()
		}
		wg.Wait()
		// a member without partitions (more members than partitions) waits too: returning
		// would end the generation and make the group rebalance again at once
		<-wctx.Done()
		if p := failed.Load(); p != nil {
			done <- *p
			return
		}
		done <- nil
	})
	err := <-done
	for _, p := range parts {
		r.metrics.assign(p, false)
	}
	if err == nil {
		r.log.Info("generation ended", zap.Int32("generation", gen.ID))
	}
	return err
}

var (
	errGenerationEnded = errors.New("generation ended")
	errStop            = errors.New("stopping")
)

// LockFile is held (flock) by the process replicating into a directory.
const LockFile = "replicate.lock"

// lockDir takes the directory's lock: two processes writing one directory would overwrite
// each other's rolls and manifest.
func lockDir(dir string) (func(), error) {
	f, err := os.OpenFile(filepath.Join(dir, LockFile), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", dir, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s is in use by another rekey replicate process (each process needs its own --out)", dir)
	}
	return func() {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}
