package replicate

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	kafkago "github.com/segmentio/kafka-go"
	"go.uber.org/zap"

	"github.com/rekey/rekey/output"
	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/sink/formats"
	"github.com/rekey/rekey/sink/lindorm"
	"github.com/rekey/rekey/sink/sqlsink"
	"github.com/rekey/rekey/source/kafka"
	"github.com/rekey/rekey/store"
)

// Replicator is one member of the consumer group. Metrics may be read while Run is in progress.
type Replicator struct {
	cfg     Config
	log     *zap.Logger
	target  pipeline.TargetSchema
	dstmt   *deleteStmt
	dialer  *kafkago.Dialer
	topic   *kafka.OffsetLookup // the topic's offsets: /metrics' end offsets, the partitions of other members
	metrics *Metrics
	man     *manifest
	sqlw    *sqlsink.Writer // the target table, when it is one (then man is nil)
	offs    *offsetBook     // the table's: the next offsets committed, kept in the state folder
	member  string          // names this process's temporary files
	// tables is the table the topic's first event named, when the mapping states none
	// (source.table): the partitions' decoders share it
	tables kafka.TableSeen

	rawWritten   atomic.Int64 // buffered bytes encoded into files, for the size estimate
	bytesEncoded atomic.Int64 // file bytes they became

	crashed atomic.Bool // a fault hook stopped the process: leave the disk as a kill would
}

// ErrOutput is wrapped by New's errors that are failures of the output (a read or a write that
// failed: a full disk, a bucket that does not answer, a damaged replicate.json), not refusals of
// what was asked: the same command may succeed once the cause is fixed.
var ErrOutput = errors.New("replicate: the output failed")

// ErrGroupSettings is wrapped by Run's error when the broker refuses the consumer group's
// settings for good (a session timeout outside its bounds): the same command fails again.
var ErrGroupSettings = errors.New("replicate: the broker refuses the consumer group's settings")

// groupSettingsError is an error that is ErrGroupSettings without saying so in its text.
type groupSettingsError struct{ error }

func (e groupSettingsError) Unwrap() error      { return e.error }
func (groupSettingsError) Is(target error) bool { return target == ErrGroupSettings }

// outputError is an error that is ErrOutput without saying so in its text.
type outputError struct{ error }

func (e outputError) Unwrap() error      { return e.error }
func (outputError) Is(target error) bool { return target == ErrOutput }

// outputFailed marks err, the output's failure, as ErrOutput (nil stays nil).
func outputFailed(err error) error {
	if err == nil {
		return nil
	}
	return outputError{err}
}

// New validates cfg and prepares the output, which on a folder the members of the consumer group
// share: replicate.json (created, or checked against cfg), ddl.sql and bulkload.json, the
// manifest of the members before it continued. On an object store it takes the output's lock
// first: one member per prefix.
func New(ctx context.Context, cfg Config) (*Replicator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if _, err := kafka.NewDecoder(cfg.Kafka, cfg.Program.Source()); err != nil {
		return nil, err
	}
	if t := cfg.Program.SourceTable(); t != "" && cfg.Kafka.Format != kafka.FormatDebezium {
		return nil, fmt.Errorf("%w: the mapping's source.table (%s) names the table of a topic of Debezium change events, whose source names their table; "+
			"the topic is read with format=%s, whose rows name none: read it with format=debezium, or drop source.table", kafka.ErrSchema, t, cfg.Kafka.Format)
	}
	dialer, err := cfg.Kafka.Dialer()
	if err != nil {
		return nil, err
	}
	topic, err := cfg.Kafka.NewOffsetLookup()
	if err != nil {
		return nil, err
	}
	r := &Replicator{cfg: cfg, log: cfg.Logger, target: cfg.Program.Target(), dialer: dialer, topic: topic, metrics: newMetrics(cfg.Kafka.Topic, cfg.Version, topic.Offsets),
		member: fmt.Sprintf("%08x", rand.Uint32())}
	r.dstmt = newDeleteStmt(r.target)
	if cfg.SQL.Target != nil {
		// the state folder exists from the start, as an output folder does
		if err := store.MakeRoot(cfg.Store); err != nil {
			return nil, outputFailed(fmt.Errorf("create output directory: %w", err))
		}
		if err := r.loadOffsetBook(ctx); err != nil {
			return nil, err
		}
		return r, r.openSQL(ctx)
	}
	repl := Replication{Topic: cfg.Kafka.Topic, Group: cfg.Kafka.Group, Format: cfg.Kafka.Format}
	if r.man, err = openManifest(ctx, cfg.Store, cfg.Out, r.baseManifest, repl, r.log); err != nil {
		return nil, err
	}
	if err := r.prepare(ctx); err != nil {
		r.man.close()
		return nil, err
	}
	if r.man.legacy {
		r.log.Warn("manifest.json was written by an earlier rekey that counted replayed messages again: its rows_in, rows_written and rows_rejected restart from the rolls committed from now on; its segments are kept")
	}
	return r, nil
}

// prepare writes the output's own files under its commit lock: members starting together
// would otherwise race to create replicate.json and write the same temporary names. A plan
// placed from a sample of the topic before the output had one (quantile split keys, a count from
// the data's size) may differ from the one a member started together with stored first, from its
// own sample: this member takes the stored one.
func (r *Replicator) prepare(ctx context.Context) error {
	cfg := &r.cfg
	unlock, err := r.man.lock(ctx)
	if err != nil {
		return outputFailed(err)
	}
	defer unlock()
	st, err := LoadStateFrom(ctx, cfg.Store)
	if err != nil {
		return outputFailed(err)
	}
	if st != nil {
		if !samePlan(st.Plan, cfg.Plan) && st.Fingerprint == cfg.Program.Fingerprint() && sampledPlan(cfg.Program, cfg.Plan) {
			r.log.Info("taking the region plan the output stored: a member started with this one placed it from its own sample of the topic first",
				zap.Int("regions", st.Plan.Count()), zap.String("strategy", st.Plan.Strategy))
			cfg.Plan = st.Plan
		}
		if err := st.check(cfg); err != nil {
			return err
		}
	} else {
		if err := output.CheckReplicationOutput(ctx, cfg.Store, cfg.Out); err != nil {
			return err
		}
		st = &State{Fingerprint: cfg.Program.Fingerprint(), Table: r.target.Table, Topic: cfg.Kafka.Topic, Group: cfg.Kafka.Group,
			Message: cfg.Kafka.Format, KeyColumn: &cfg.Kafka.KeyColumn, FileFormat: cfg.Format.Name(), Plan: cfg.Plan, CreatedAt: time.Now().UTC()}
		if err := st.save(ctx, cfg.Store); err != nil {
			return outputFailed(err)
		}
	}
	ddl, err := lindorm.DDL(r.target, cfg.Plan, cfg.Program.Options())
	if err != nil {
		return fmt.Errorf("write %s: %w", output.DDLFile, err)
	}
	if err := cfg.Store.Put(ctx, output.DDLFile, []byte(ddl)); err != nil {
		return outputFailed(fmt.Errorf("write %s: %w", output.DDLFile, err))
	}
	jobOpt := cfg.Job
	jobOpt.FileType, jobOpt.Regions, jobOpt.DataDir = formats.LoadAs(cfg.Format.Name()), cfg.Plan.Count(), output.DataDir
	jobOpt.Segments = true // loaded segment by segment, each before its deletes
	if jobOpt.Out == "" {
		jobOpt.Out = cfg.Out // the job's filePath, and whether it reads a bucket (JobOptions decides both from Out)
	}
	job, err := lindorm.BulkloadConfig(r.target, jobOpt)
	if err != nil {
		return err
	}
	if err := cfg.Store.Put(ctx, output.BulkloadFile, job); err != nil {
		return outputFailed(fmt.Errorf("write %s: %w", output.BulkloadFile, err))
	}
	return outputFailed(r.man.write(ctx)) // an output describes itself from the start
}

func (r *Replicator) baseManifest() *output.Manifest {
	m := output.NewManifest(r.target, r.cfg.Plan, r.cfg.Format.Name(), r.cfg.RegionSize)
	m.Mapping = r.cfg.Program.Name()
	m.MappingFingerprint = r.cfg.Program.Fingerprint()
	m.RekeyVersion = r.cfg.Version
	return m
}

// Plan is the output's region plan: Config.Plan, or the one the output stored when Config.Plan
// was placed from another sample of the topic (see prepare).
func (r *Replicator) Plan() pipeline.RegionPlan { return r.cfg.Plan }

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
	defer r.topic.Close()
	if r.man != nil {
		defer func() {
			if r.crashed.Load() {
				r.man.cl.Abandon() // as a kill leaves it: on an object store the next run waits for it to expire
				return
			}
			r.man.close()
		}()
	} else {
		defer r.sqlw.Close()
	}
	// a group not left by the time Run returns (leaveGroup) may still log: past Run, to no one
	var returned atomic.Bool
	defer returned.Store(true)
	// the brokers' check and Next (which blocks while joining): stop and ctx must interrupt them
	nextCtx, cancelNext := context.WithCancel(ctx)
	defer cancelNext()
	go func() {
		select {
		case <-stop:
			cancelNext()
		case <-nextCtx.Done():
		}
	}()
	// kafka-go's group retries brokers that refuse, silently, until the join limit: fail at once
	// when none answers (a restart retries), or refuses the credentials
	if err := r.cfg.Kafka.CheckBrokers(nextCtx); err != nil {
		if isClosed(stop) && ctx.Err() == nil { // stopped before anything was read
			r.metrics.setState("stopped")
			return nil
		}
		r.metrics.setState("failed")
		return err
	}
	cg, err := r.consumerGroup(&returned)
	if err != nil {
		return err
	}
	defer r.leaveGroup(cg)
	r.metrics.setState("joining")
	r.log.Info("joining consumer group", zap.String("group", r.cfg.Kafka.Group), zap.String("topic", r.cfg.Kafka.Topic))
	if err := r.generations(ctx, nextCtx, stop, cg); err != nil {
		r.metrics.setState("failed")
		return err
	}
	if ctx.Err() != nil {
		r.metrics.setState("failed")
		return ctx.Err()
	}
	r.metrics.setState("stopped")
	r.log.Info("replication stopped: rolls committed, offsets committed, group left")
	return nil
}

// consumerGroup is the group's kafka-go ConsumerGroup; its errors are logged (at Debug) until
// returned is set.
func (r *Replicator) consumerGroup(returned *atomic.Bool) (*kafkago.ConsumerGroup, error) {
	log := r.log
	g := r.cfg.Group
	cg, err := kafkago.NewConsumerGroup(kafkago.ConsumerGroupConfig{
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
		ErrorLogger: kafkago.LoggerFunc(func(f string, a ...any) {
			if !returned.Load() {
				log.Debug("kafka-go: " + strings.TrimSpace(fmt.Sprintf(f, a...)))
			}
		}),
	})
	if err != nil {
		return nil, fmt.Errorf("consumer group: %w", err)
	}
	return cg, nil
}

// generations joins the group's generations one after the other and runs each (generation),
// until nextCtx ends (stop closed, or ctx cancelled), stop is closed after a generation, or a
// join or a generation fails (its error).
func (r *Replicator) generations(ctx, nextCtx context.Context, stop <-chan struct{}, cg *kafkago.ConsumerGroup) error {
	var lastErr string
	joinLimit := r.unhealthyAfter()
	joinDeadline := time.Now().Add(joinLimit)
	for {
		// a join that outlasts every timeout the broker applies waits for something that will
		// not come: fail, saying what the broker reports, rather than sit in "joining"
		jctx, cancelJoin := context.WithDeadline(nextCtx, joinDeadline)
		gen, err := cg.Next(jctx)
		joinTimedOut := errors.Is(jctx.Err(), context.DeadlineExceeded) // before cancelJoin, which sets Canceled
		cancelJoin()
		if err != nil {
			if nextCtx.Err() == nil && joinTimedOut {
				r.metrics.setState("failed") // while the broker is asked about the group
				return r.joinStuck(ctx, joinLimit)
			}
			if nextCtx.Err() != nil || errors.Is(err, kafkago.ErrGroupClosed) {
				return nil
			}
			if kafka.IsAuthFailure(err) { // retrying cannot fix credentials
				if authErr := r.cfg.Kafka.CheckAuth(ctx); authErr != nil {
					return authErr
				}
			}
			if errors.Is(err, kafkago.GroupAuthorizationFailed) { // nor an ACL
				principal := "User:NAME"
				if u := r.cfg.Kafka.SASL.User; u != "" {
					principal = "User:" + u
				}
				return fmt.Errorf("consumer group %s: the broker refuses to let this client use the group: grant it Read on the group "+
					"(kafka-acls --add --allow-principal %s --operation Read --group %s), then run again: %w", r.cfg.Kafka.Group, principal, r.cfg.Kafka.Group, err)
			}
			if errors.Is(err, kafkago.InvalidSessionTimeout) { // nor a timeout out of the broker's bounds
				return groupSettingsError{fmt.Errorf("consumer group %s: the broker refuses --session-timeout %s: it takes a session timeout between its "+
					"group.min.session.timeout.ms and group.max.session.timeout.ms (6s and 30m by default): set --session-timeout between them, then run again: %w",
					r.cfg.Kafka.Group, r.cfg.Group.SessionTimeout, err)}
			}
			if msg := err.Error(); msg != lastErr {
				r.log.Warn("consumer group: retrying", zap.Error(err))
				lastErr = msg
			}
			continue
		}
		lastErr = ""
		r.metrics.Rebalances.Add(1)
		if err := r.generation(ctx, stop, gen); err != nil {
			return err
		}
		if isClosed(stop) || ctx.Err() != nil {
			return nil
		}
		r.metrics.setState("joining")
		joinDeadline = time.Now().Add(joinLimit)
	}
}

// joinStuck is the error of a join that took longer than limit, with the group as the broker
// describes it.
func (r *Replicator) joinStuck(ctx context.Context, limit time.Duration) error {
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	group, err := r.cfg.Kafka.DescribeGroup(dctx)
	if err != nil {
		group = "not known: " + err.Error()
	}
	g := r.cfg.Group
	return fmt.Errorf("consumer group %s: no partitions assigned after joining for %s (2 x session timeout %s + rebalance timeout %s); the broker reports the group: %s. "+
		"A member killed while joining, or a member that stopped heartbeating, can hold the group's rebalance: restart this member; if it fails again, check the members listed (and stop strays), or the broker's coordinator",
		r.cfg.Kafka.Group, limit, g.SessionTimeout, g.RebalanceTimeout, group)
}

// leaveGroup closes the consumer group, waiting at most Group.LeaveTimeout: kafka-go's Close
// waits for a join in progress, which can last the whole rebalance timeout.
func (r *Replicator) leaveGroup(cg *kafkago.ConsumerGroup) {
	left := make(chan struct{})
	go func() {
		cg.Close()
		close(left)
	}()
	t := time.NewTimer(r.cfg.Group.LeaveTimeout)
	defer t.Stop()
	select {
	case <-left:
	case <-t.C:
		r.log.Warn("stopping without waiting to leave the consumer group (a join is in progress): the broker drops this member after its session timeout; every committed offset is in durable output",
			zap.Duration("waited", r.cfg.Group.LeaveTimeout), zap.Duration("session_timeout", r.cfg.Group.SessionTimeout))
	}
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
	if h := r.cfg.Hooks.Joined; h != nil {
		h(gen.ID, parts)
	}
	var commitMu sync.Mutex
	commit := func(partition int, offset int64) error {
		commitMu.Lock()
		defer commitMu.Unlock()
		return gen.CommitOffsets(map[string]map[int]int64{r.cfg.Kafka.Topic: {partition: offset}})
	}
	done := make(chan error, 1)
	var others []int
	if r.man != nil && r.man.cl.Exclusive() {
		others = r.othersPartitions(ctx, parts)
	}
	// The claim runs inside the generation's routine: kafka-go rejoins the group only once the
	// routines it started returned, so no other member is assigned these partitions while this
	// one removes what an earlier owner left of them. A generation that ended before its
	// routine started is not waited for (the partitions may already be another member's, their
	// rolls open): it claims nothing and starts no worker.
	gen.Start(func(gctx context.Context) {
		if gctx.Err() != nil {
			done <- nil
			return
		}
		if len(others) > 0 {
			done <- r.otherMember(ctx, gctx, stop, others)
			return
		}
		var claims map[int]claimed
		if r.man != nil {
			var err error
			if claims, err = r.man.claim(ctx, parts, r.cfg.Plan.Count()); err != nil {
				done <- err
				return
			}
		}
		r.metrics.setState("consuming")
		done <- r.runWorkers(ctx, gctx, stop, gen, claims, commit)
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

// otherMember waits, for a member whose store allows no other (an object store), while another
// member holds partitions (others): a partition just added may be missing from an assignment
// made before it, and a new generation follows at once (nil). Missing for longer, another
// member holds it: the error says so.
func (r *Replicator) otherMember(ctx, gctx context.Context, stop <-chan struct{}, others []int) error {
	select {
	case <-gctx.Done():
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-stop:
		return nil
	case <-time.After(r.otherMemberWait()):
		return fmt.Errorf("another member of consumer group %s holds partitions %v of topic %s: on an object store the group has one member "+
			"(an --out prefix has no lock members could share, and members writing to different prefixes would each keep the messages of a partition that moves between them); "+
			"stop the other members, or replicate to a folder the members share", r.cfg.Kafka.Group, others, r.cfg.Kafka.Topic)
	}
}

// runWorkers runs a worker per partition the generation assigned until gctx ends (the
// generation ends: the member keeps heartbeating while its workers close their rolls), stop is
// closed or a worker fails (its error, which stops the others).
func (r *Replicator) runWorkers(ctx, gctx context.Context, stop <-chan struct{}, gen *kafkago.Generation, claims map[int]claimed, commit func(int, int64) error) error {
	assigned := gen.Assignments[r.cfg.Kafka.Topic]
	wctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	closed := make(chan struct{}) // the workers closed their rolls and committed
	defer close(closed)
	lease := newLease(r.cfg.Group)
	// the heartbeats end with the generation's work, a beat in flight cancelled: one waiting on
	// a slow coordinator went on past the generation, and past Run, for up to a session timeout
	beatCtx, endBeats := context.WithCancel(ctx)
	var beats sync.WaitGroup
	beats.Add(1)
	go func() {
		defer beats.Done()
		r.heartbeat(beatCtx, gen, lease, closed)
	}()
	defer func() {
		endBeats()
		beats.Wait()
	}()
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
			var err error
			if r.sqlw != nil {
				w := r.newSQLWorker(a.ID, commit)
				w.lease = lease
				err = w.run(wctx, ctx, a.Offset)
			} else {
				err = r.newWorker(a.ID, commit, len(assigned)).run(wctx, ctx, a.Offset, claims[a.ID])
			}
			if err != nil {
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
		if errors.Is(*p, errLeaseLost) {
			// not a failure: the group goes on without this member, which joins again
			r.metrics.LeasesLost.Add(1)
			r.log.Warn("stopping this generation's work and joining the group again: what this member read and did not apply is left to the partitions' next owner", zap.Error(*p))
			return nil
		}
		return *p
	}
	return nil
}

// heartbeat heartbeats the generation's member until closed is closed, beside kafka-go's own
// heartbeats, and renews lease with every beat the broker accepts. kafka-go stops heartbeating as
// soon as a rebalance begins, and the broker drops a member that sends none for its session
// timeout, even while the group waits (up to the rebalance timeout) for it to close its rolls and
// commit their offsets: those commits would be refused and the messages replayed. kafka-go does
// not say when its beats were accepted, which the lease needs.
func (r *Replicator) heartbeat(ctx context.Context, gen *kafkago.Generation, lease *lease, closed <-chan struct{}) {
	log := r.log.With(zap.String("group", gen.GroupID), zap.Int32("generation", gen.ID))
	cl, tr, err := r.cfg.Kafka.Client()
	if err != nil {
		log.Warn("cannot heartbeat: the broker may drop this member after its session timeout while it closes its rolls, and a SQL target's statements run without knowing whether it did", zap.Error(err))
		lease.forgo()
		return
	}
	defer tr.CloseIdleConnections()
	var coordinator net.Addr
	warned := false
	t := time.NewTicker(r.cfg.Group.HeartbeatInterval)
	defer t.Stop()
	for {
		select {
		case <-closed:
			return
		case <-ctx.Done():
			return
		case <-t.C:
		}
		hctx, cancel := context.WithTimeout(ctx, r.cfg.Group.SessionTimeout)
		err = nil
		if coordinator == nil {
			// its error, or the broker's answer, is what the warning below names
			var fc *kafkago.FindCoordinatorResponse
			fc, err = cl.FindCoordinator(hctx, &kafkago.FindCoordinatorRequest{Key: gen.GroupID, KeyType: kafkago.CoordinatorKeyTypeConsumer})
			switch {
			case err != nil:
			case fc.Error != nil:
				err = fmt.Errorf("find the group's coordinator: %w", fc.Error)
			case fc.Coordinator != nil:
				coordinator = kafkago.TCP(net.JoinHostPort(fc.Coordinator.Host, strconv.Itoa(fc.Coordinator.Port)))
			}
		}
		var refused error
		sent := lease.since()
		if coordinator != nil {
			var resp *kafkago.HeartbeatResponse
			if resp, err = cl.Heartbeat(hctx, &kafkago.HeartbeatRequest{Addr: coordinator, GroupID: gen.GroupID, GenerationID: gen.ID, MemberID: gen.MemberID}); err == nil {
				refused = heartbeatError(resp)
			}
		}
		cancel()
		if ctx.Err() != nil {
			return // the generation's work ended while the beat was on its way: its answer says nothing
		}
		switch {
		case coordinator == nil || err != nil:
			coordinator = nil // found again at the next beat
			log.Debug("heartbeat failed; retrying", zap.Error(err))
			if left := lease.left(); !warned && left < lease.length/2 {
				// said once a generation: past the lease, a table's statements stop
				warned = true
				log.Warn("heartbeats are not getting through to the group coordinator; retrying", zap.Error(err),
					zap.Duration("lease_left", max(0, left)))
			}
		case refused == nil:
			lease.renew(sent)
		case !errors.Is(refused, kafkago.RebalanceInProgress):
			// the answer during a rebalance is REBALANCE_IN_PROGRESS: the beat counts for the
			// broker (not for the lease); any other error means the member is out of the group
			lease.lost.Store(true)
			log.Info("heartbeats end: the broker says this member is no longer in the generation", zap.Error(refused))
			return
		}
	}
}

// heartbeatError is the error code of a Heartbeat answer, which kafka-go's Client.Heartbeat
// misreads from version 1 on: its response puts error_code before throttle_time_ms, where the
// protocol has throttle_time_ms first (segmentio/kafka-go#1371, open in v0.4.51). The error code
// then arrives as the low 16 bits of Throttle's milliseconds, and Error holds the throttle time's
// high half (zero below 65 s). A version 0 answer, without a throttle time, is read right: its
// Error is the error. TestKafkaGoHeartbeatDecoding says when kafka-go reads them right.
func heartbeatError(resp *kafkago.HeartbeatResponse) error {
	if code := int16(uint16(int32(resp.Throttle / time.Millisecond))); code != 0 {
		return kafkago.Error(code)
	}
	return resp.Error
}

// otherMemberWait is how long a member on an object store waits for the generation to end when
// its assignment lacks partitions of the topic, before it fails. A killed member (a restart's
// predecessor) keeps its partitions until its session times out, at most a session timeout
// after this generation began; the second one is margin for the broker to notice and rebalance.
func (r *Replicator) otherMemberWait() time.Duration {
	return 2 * r.cfg.Group.SessionTimeout
}

// othersPartitions returns the topic's partitions that are not among parts (assigned to this
// member); nil when the topic's partitions cannot be read (a warning: the next generation checks again).
func (r *Replicator) othersPartitions(ctx context.Context, parts []int) []int {
	offs, err := r.topic.Offsets(ctx)
	if err != nil {
		r.log.Warn("could not list the topic's partitions to check that this member is the group's only one", zap.Error(err))
		return nil
	}
	mine := map[int]bool{}
	for _, p := range parts {
		mine[p] = true
	}
	var others []int
	for _, o := range offs {
		if !mine[o.Partition] {
			others = append(others, o.Partition)
		}
	}
	sort.Ints(others)
	return others
}

var (
	errGenerationEnded = errors.New("generation ended")
	errStop            = errors.New("stopping")
	// errLeaseLost: the member may no longer hold its generation's partitions (lease)
	errLeaseLost = errors.New("this member's lease on its partitions ran out: no heartbeat was accepted for longer than the session and rebalance timeouts allow, or the broker dropped the member")
)
