// Package kafka reads Kafka topics for rekey with github.com/segmentio/kafka-go.
//
// It has three parts:
//
//   - Config: brokers, topic, message format, consumer group, SASL (PLAIN, SCRAM-SHA-256/512) and
//     TLS, parsed from a kafka:// URI (ParseURI) and validated once.
//   - Decoder: one Kafka message to the changes it makes to the target table: upserts of rows and
//     deletes of keys. Formats: json (the value is a row object, the key optional, a null value
//     a delete of the key) and debezium (the change-event envelope of Debezium's relational and
//     Cassandra connectors, with or without the JSON converter's schema/payload wrapping).
//   - Window: a bounded, non-committing pipeline.Source (and Sizer, Sampler) over the messages a
//     topic retains, for `rekey report` and `rekey migrate` over a window of a topic.
//
// Continuous replication (consumer groups, rolls, offset commits) lives in package replicate,
// which builds on the Config and the Decoder.
package kafka

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	kafkago "github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/protocol/describegroups"
	"github.com/segmentio/kafka-go/sasl"
	"github.com/segmentio/kafka-go/sasl/plain"
	"github.com/segmentio/kafka-go/sasl/scram"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/source/sourceuri"
)

// Message formats.
const (
	FormatJSON     = "json"
	FormatDebezium = "debezium"
)

// Where a window starts.
const (
	StartEarliest = "earliest"
	StartLatest   = "latest"
)

// PasswordEnv is the environment variable the SASL password is read from; a password in the URI
// is refused (it would show in `ps`, shell history and logs).
const PasswordEnv = "REKEY_KAFKA_PASSWORD"

// Config says where and how to read.
type Config struct {
	Brokers []string // host:port, at least one
	Topic   string
	// Group is the consumer group of `rekey replicate` (required there). The window source never
	// joins a group and never commits offsets.
	Group string
	// Format of the message values: json (default) or debezium.
	Format string
	// KeyColumn names the source column a message key that is not a JSON object fills (a plain
	// string or number key, as many producers write). Empty: such keys are ignored, and a
	// tombstone with one is rejected.
	KeyColumn string

	// Window (the bounded source): Start is earliest (default: the oldest retained messages) or
	// latest (the newest); Max bounds the messages read in all (0: everything up to the end
	// offsets seen when the window opens).
	Start string
	Max   int64

	SASL SASLConfig
	TLS  TLSConfig

	ClientID    string        // default "rekey"
	DialTimeout time.Duration // default 10s
}

// SASLConfig is SASL authentication. Mechanism is "", "plain", "scram-sha-256" or "scram-sha-512".
type SASLConfig struct {
	Mechanism string
	User      string
	Password  string
}

// TLSConfig is TLS to the brokers. Enabled without a CAFile uses the system roots.
type TLSConfig struct {
	Enabled            bool
	CAFile             string // PEM roots
	CertFile, KeyFile  string // client certificate (mutual TLS)
	ServerName         string // overrides the name checked in the broker's certificate
	InsecureSkipVerify bool   // testing only
}

// URIHelp documents the kafka:// URI for --help texts.
const URIHelp = `kafka://HOST:PORT[,HOST:PORT...]/TOPIC?PARAMS
                     format=json|debezium  message values (default json); a null value (tombstone)
                                           deletes the key in the message key
                     group=G               consumer group (rekey replicate)
                     keycol=COLUMN         the column a non-object message key fills
                     start=earliest|latest window start for report/migrate (default earliest)
                     max=N                 window size for report/migrate (default: to the end)
                     sasl=plain|scram-sha-256|scram-sha-512&user=U  (password: ` + PasswordEnv + `, never in the URI)
                     tls=true&ca=FILE&cert=FILE&key=FILE&servername=NAME&insecure=true`

// ParseURI reads a kafka:// URI (see URIHelp). The SASL password comes from the
// REKEY_KAFKA_PASSWORD environment variable only, read with getenv (os.Getenv in rekey): a URI holding one (user:password@host, or a
// parameter named password, PASSWORD, pass%77ord, token...) is refused, and errors quote the
// URI with its secrets masked (sourceuri.Redact).
func ParseURI(uri string, getenv func(string) string) (Config, error) {
	var c Config
	if !strings.HasPrefix(uri, "kafka://") {
		return c, fmt.Errorf("kafka source %q: want kafka://HOST:PORT[,HOST:PORT]/TOPIC?format=json", sourceuri.Redact(uri))
	}
	u, err := sourceuri.Parse(uri, "kafka", PasswordEnv)
	if err != nil {
		return c, fmt.Errorf("kafka source %q: %w", sourceuri.Redact(uri), err)
	}
	c.SASL.User = u.User
	for _, h := range u.Hosts {
		if !strings.Contains(h, ":") {
			h += ":9092"
		}
		c.Brokers = append(c.Brokers, h)
	}
	topic, err := url.PathUnescape(u.Path)
	if err != nil {
		return c, fmt.Errorf("kafka source %q: topic: %w", sourceuri.Redact(uri), err)
	}
	c.Topic = topic
	q := u.Query
	var problems []string
	bad := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	boolParam := func(name string) bool {
		v := q.Get(name)
		if v == "" {
			return false
		}
		b, err := strconv.ParseBool(v)
		if err != nil {
			bad("%s=%q: want true or false", name, v)
		}
		return b
	}
	for name, vals := range q {
		switch name {
		case "group", "format", "keycol", "start", "max", "sasl", "user", "tls", "ca",
			"cert", "key", "servername", "insecure", "client_id":
			if len(vals) > 1 {
				bad("%s given %d times", name, len(vals))
			}
		default:
			bad("unknown parameter %q", name)
		}
	}
	c.Group = q.Get("group")
	c.Format = strings.ToLower(q.Get("format"))
	c.KeyColumn = q.Get("keycol")
	c.Start = strings.ToLower(q.Get("start"))
	if m := q.Get("max"); m != "" {
		n, err := strconv.ParseInt(m, 10, 64)
		if err != nil || n < 0 {
			bad("max=%q: want a number of messages", m)
		}
		c.Max = n
	}
	c.SASL.Mechanism = strings.ToLower(q.Get("sasl"))
	if u := q.Get("user"); u != "" {
		if c.SASL.User != "" && c.SASL.User != u {
			// one login: which of the two the password is for is a guess
			bad("the user %s@ and user=%s disagree: give the user once", c.SASL.User, u)
		}
		c.SASL.User = u
	}
	if c.SASL.Mechanism == "" && c.SASL.User != "" {
		c.SASL.Mechanism = "plain"
	}
	if c.SASL.Mechanism != "" {
		c.SASL.Password = getenv(PasswordEnv)
	} else if getenv(PasswordEnv) != "" {
		// a password no login uses: the URI most likely lacks its user, and a broker that
		// wants SASL would only close the connection
		bad("%s is set but the URI asks for no SASL login: add sasl=plain|scram-sha-256|scram-sha-512&user=U, or unset %s for a broker without SASL", PasswordEnv, PasswordEnv)
	}
	c.TLS.Enabled = boolParam("tls")
	c.TLS.CAFile, c.TLS.CertFile, c.TLS.KeyFile = q.Get("ca"), q.Get("cert"), q.Get("key")
	c.TLS.ServerName = q.Get("servername")
	c.TLS.InsecureSkipVerify = boolParam("insecure")
	if c.TLS.CAFile != "" || c.TLS.CertFile != "" || c.TLS.InsecureSkipVerify || c.TLS.ServerName != "" {
		c.TLS.Enabled = true
	}
	c.ClientID = q.Get("client_id")
	if len(problems) > 0 {
		sort.Strings(problems)
		return c, fmt.Errorf("kafka source %q: %s", sourceuri.Redact(uri), strings.Join(problems, "; "))
	}
	return c, c.Validate()
}

// Validate checks the configuration and fills in defaults.
func (c *Config) Validate() error {
	var errs []error
	if len(c.Brokers) == 0 {
		errs = append(errs, errors.New("kafka: no broker address (kafka://HOST:PORT/TOPIC)"))
	}
	for _, b := range c.Brokers {
		if _, port, err := net.SplitHostPort(b); err != nil || port == "" {
			errs = append(errs, fmt.Errorf("kafka: broker %q: want HOST:PORT", b))
		}
	}
	if c.Topic == "" || strings.ContainsAny(c.Topic, "/?&") {
		errs = append(errs, fmt.Errorf("kafka: topic %q: name one topic after the brokers (kafka://HOST:PORT/TOPIC)", c.Topic))
	}
	switch c.Format {
	case "":
		c.Format = FormatJSON
	case FormatJSON, FormatDebezium:
	default:
		errs = append(errs, fmt.Errorf("kafka: format %q: want json or debezium", c.Format))
	}
	switch c.Start {
	case "":
		c.Start = StartEarliest
	case StartEarliest, StartLatest:
	default:
		errs = append(errs, fmt.Errorf("kafka: start %q: want earliest or latest", c.Start))
	}
	if c.Max < 0 {
		errs = append(errs, fmt.Errorf("kafka: max %d must not be negative", c.Max))
	}
	switch c.SASL.Mechanism {
	case "":
	case "plain", "scram-sha-256", "scram-sha-512":
		if c.SASL.User == "" {
			errs = append(errs, fmt.Errorf("kafka: sasl=%s needs user=", c.SASL.Mechanism))
		}
		if c.SASL.Password == "" {
			errs = append(errs, fmt.Errorf("kafka: sasl=%s needs a password (set %s)", c.SASL.Mechanism, PasswordEnv))
		}
	default:
		errs = append(errs, fmt.Errorf("kafka: sasl %q: want plain, scram-sha-256 or scram-sha-512", c.SASL.Mechanism))
	}
	if (c.TLS.CertFile == "") != (c.TLS.KeyFile == "") {
		errs = append(errs, errors.New("kafka: a TLS client certificate needs both cert= and key="))
	}
	if c.ClientID == "" {
		c.ClientID = "rekey"
	}
	if c.DialTimeout <= 0 {
		c.DialTimeout = 10 * time.Second
	}
	return errors.Join(errs...)
}

// Mechanism returns the SASL mechanism, or nil without SASL.
func (c *Config) Mechanism() (sasl.Mechanism, error) {
	switch c.SASL.Mechanism {
	case "":
		return nil, nil
	case "plain":
		return plain.Mechanism{Username: c.SASL.User, Password: c.SASL.Password}, nil
	case "scram-sha-256":
		return scram.Mechanism(scram.SHA256, c.SASL.User, c.SASL.Password)
	case "scram-sha-512":
		return scram.Mechanism(scram.SHA512, c.SASL.User, c.SASL.Password)
	}
	return nil, fmt.Errorf("kafka: unknown SASL mechanism %q", c.SASL.Mechanism)
}

// TLSClientConfig returns the TLS configuration, or nil without TLS.
func (c *Config) TLSClientConfig() (*tls.Config, error) {
	if !c.TLS.Enabled {
		return nil, nil
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: c.TLS.ServerName, InsecureSkipVerify: c.TLS.InsecureSkipVerify}
	if c.TLS.CAFile != "" {
		pem, err := os.ReadFile(c.TLS.CAFile)
		if err != nil {
			return nil, fmt.Errorf("kafka: TLS CA file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("kafka: TLS CA file %s holds no PEM certificate", c.TLS.CAFile)
		}
		tc.RootCAs = pool
	}
	if c.TLS.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(c.TLS.CertFile, c.TLS.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("kafka: TLS client certificate: %w", err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	return tc, nil
}

// Dialer is the kafka-go dialer for readers and consumer groups.
func (c *Config) Dialer() (*kafkago.Dialer, error) {
	mech, err := c.Mechanism()
	if err != nil {
		return nil, err
	}
	tc, err := c.TLSClientConfig()
	if err != nil {
		return nil, err
	}
	return &kafkago.Dialer{ClientID: c.ClientID, Timeout: c.DialTimeout, DualStack: true, TLS: tc, SASLMechanism: mech}, nil
}

// Client is a kafka-go client for metadata and offset look-ups; close its Transport with
// CloseIdleConnections when done.
func (c *Config) Client() (*kafkago.Client, *kafkago.Transport, error) {
	mech, err := c.Mechanism()
	if err != nil {
		return nil, nil, err
	}
	tc, err := c.TLSClientConfig()
	if err != nil {
		return nil, nil, err
	}
	tr := &kafkago.Transport{ClientID: c.ClientID, DialTimeout: c.DialTimeout, TLS: tc, SASL: mech, MetadataTTL: 5 * time.Second}
	return &kafkago.Client{Addr: kafkago.TCP(c.Brokers...), Transport: tr, Timeout: 30 * time.Second}, tr, nil
}

// PartitionOffsets are one partition's retained offsets: [First, End) (End is the high
// watermark, the offset the next message will get).
type PartitionOffsets struct {
	Partition  int
	First, End int64
}

// Offsets looks up the topic's partitions and their first and end offsets.
func (c *Config) Offsets(ctx context.Context) ([]PartitionOffsets, error) {
	cl, tr, err := c.Client()
	if err != nil {
		return nil, err
	}
	defer tr.CloseIdleConnections()
	return c.topicOffsets(ctx, cl)
}

// OffsetLookup looks the topic's offsets up through connections it keeps between look-ups.
// replicate's /metrics reads the end offsets at every scrape: a new client each time would dial
// the brokers (and, with TLS and SASL, shake hands and authenticate) for each scrape. Idle
// connections close after the transport's idle timeout (30 s) and at Close; the lookup stays
// usable after Close.
type OffsetLookup struct {
	c  *Config
	cl *kafkago.Client
	tr *kafkago.Transport
}

// NewOffsetLookup returns a lookup of the topic's offsets; it dials nothing until its first use.
func (c *Config) NewOffsetLookup() (*OffsetLookup, error) {
	cl, tr, err := c.Client()
	if err != nil {
		return nil, err
	}
	return &OffsetLookup{c: c, cl: cl, tr: tr}, nil
}

// Offsets looks up the topic's partitions and their first and end offsets, as Config.Offsets.
// A kept connection the broker closed since (a restart) fails the request it carried, and so
// would the others kept with it: a failed look-up is tried once more on new connections.
func (l *OffsetLookup) Offsets(ctx context.Context) ([]PartitionOffsets, error) {
	offs, err := l.c.topicOffsets(ctx, l.cl)
	if err != nil && ctx.Err() == nil && !IsAuthFailure(err) {
		l.tr.CloseIdleConnections()
		offs, err = l.c.topicOffsets(ctx, l.cl)
	}
	return offs, err
}

// Close closes the idle connections.
func (l *OffsetLookup) Close() { l.tr.CloseIdleConnections() }

// topicOffsets reads the topic's offsets through cl, naming refused credentials (the client
// reports them as "unexpected EOF").
func (c *Config) topicOffsets(ctx context.Context, cl *kafkago.Client) ([]PartitionOffsets, error) {
	offs, err := offsets(ctx, cl, c.Topic)
	if err != nil {
		if authErr := c.CheckAuth(ctx); authErr != nil {
			return nil, authErr
		}
		if refused(err) {
			return nil, fmt.Errorf("kafka: topic %s: the broker refuses to let this client describe the topic: grant it Describe and Read on the topic "+
				"(kafka-acls --add --allow-principal %s --operation Describe --operation Read --topic %s), then run again: %w", c.Topic, c.principal(), c.Topic, err)
		}
	}
	return offs, err
}

// ErrAuthentication is wrapped by the error of a broker that refused the SASL credentials: a
// wrong user, password or mechanism, which no retry can fix.
var ErrAuthentication = errors.New("authentication failed")

// CheckAuth connects to the brokers, one at a time, until one authenticates or refuses the
// credentials: a wrong user, password or mechanism then fails the command at once with an
// ErrAuthentication naming the user and the broker, where the metadata client reports "unexpected
// EOF" and a consumer group retries for ever. Without SASL, or when no broker answers, it returns
// nil: the command's own requests report unreachable brokers.
func (c *Config) CheckAuth(ctx context.Context) error {
	if c.SASL.Mechanism == "" {
		return nil
	}
	if err := c.CheckBrokers(ctx); err != nil && !errors.Is(err, errNoBroker) {
		return err
	}
	return nil
}

// errNoBroker is wrapped by CheckBrokers' error when no broker answered.
var errNoBroker = errors.New("no broker answers")

// CheckBrokers connects to the brokers, one at a time, until one answers (and, with SASL,
// authenticates): nil then. Credentials refused are an ErrAuthentication as CheckAuth's; when
// no broker answers, the error wraps the last one's network error (pipeline.Unreachable), so
// that a command fails at once where a consumer group would retry its join for minutes.
func (c *Config) CheckBrokers(ctx context.Context) error {
	dialer, err := c.Dialer()
	if err != nil {
		return err
	}
	for _, broker := range c.Brokers {
		conn, dialErr := dialer.DialContext(ctx, "tcp", broker)
		if dialErr == nil {
			// a broker that accepts the connection may still never answer (hung, starting,
			// another service on the port): it answers a request within the dial timeout
			wait := dialer.Timeout
			if wait <= 0 {
				wait = 10 * time.Second
			}
			conn.SetDeadline(time.Now().Add(wait))
			unwatch := context.AfterFunc(ctx, func() { conn.Close() }) // Ctrl-C ends the wait
			_, reqErr := conn.ApiVersions()
			unwatch()
			conn.Close()
			if reqErr == nil {
				return nil
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
			err = fmt.Errorf("broker %s accepts connections but does not answer a Kafka request within %s, so it %w: is a Kafka broker up there, listening on that port? (%w)",
				broker, wait, pipeline.ErrUnreachable, reqErr)
			continue
		}
		if IsAuthFailure(dialErr) {
			return fmt.Errorf("kafka: %w for user %s at broker %s: check %s and the mechanism (sasl=%s): %w",
				ErrAuthentication, c.SASL.User, broker, PasswordEnv, c.SASL.Mechanism, dialErr)
		}
		err = dialErr
	}
	return fmt.Errorf("kafka: %w (%s): %w", errNoBroker, strings.Join(c.Brokers, ","), err)
}

// IsAuthFailure tells whether err is a broker refusing the SASL credentials or mechanism.
func IsAuthFailure(err error) bool {
	return errors.Is(err, ErrAuthentication) || errors.Is(err, kafkago.SASLAuthenticationFailed) ||
		errors.Is(err, kafkago.UnsupportedSASLMechanism) || errors.Is(err, kafkago.IllegalSASLState)
}

func offsets(ctx context.Context, cl *kafkago.Client, topic string) ([]PartitionOffsets, error) {
	md, err := cl.Metadata(ctx, &kafkago.MetadataRequest{Topics: []string{topic}})
	if err != nil {
		return nil, fmt.Errorf("kafka: metadata of topic %s: %w", topic, err)
	}
	var parts []int
	leaders := map[int]string{}
	for _, t := range md.Topics {
		if t.Name != topic {
			continue
		}
		if errors.Is(t.Error, kafkago.UnknownTopicOrPartition) {
			if err := describeRefused(ctx, cl, topic); err != nil {
				return nil, err
			}
		}
		if t.Error != nil {
			return nil, fmt.Errorf("kafka: topic %s: %w", topic, t.Error)
		}
		for _, p := range t.Partitions {
			parts = append(parts, p.ID)
			leaders[p.ID] = net.JoinHostPort(p.Leader.Host, strconv.Itoa(p.Leader.Port))
		}
	}
	if len(parts) == 0 {
		if err := describeRefused(ctx, cl, topic); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("kafka: topic %s not found (or it has no partitions)", topic)
	}
	req := &kafkago.ListOffsetsRequest{Topics: map[string][]kafkago.OffsetRequest{}}
	for _, p := range parts {
		req.Topics[topic] = append(req.Topics[topic], kafkago.FirstOffsetOf(p), kafkago.LastOffsetOf(p))
	}
	var resp *kafkago.ListOffsetsResponse
	err = retryWhile(ctx, leaderNotReady, func() (err error) {
		resp, err = cl.ListOffsets(ctx, req)
		if err == nil {
			for _, po := range resp.Topics[topic] {
				if leaderNotReady(po.Error) {
					return po.Error
				}
			}
		}
		return err
	})
	if err != nil && (resp == nil || !leaderNotReady(err)) { // else the partitions name their errors
		return nil, fmt.Errorf("kafka: offsets of topic %s: %w", topic, err)
	}
	var out []PartitionOffsets
	for _, po := range resp.Topics[topic] {
		if errors.Is(po.Error, kafkago.Unknown) {
			// kafka-go reports a partition whose request failed on its way (its leader out of
			// reach) as UNKNOWN_SERVER_ERROR when other partitions' requests succeeded; asked
			// alone, the request's own error comes back
			one := &kafkago.ListOffsetsRequest{Topics: map[string][]kafkago.OffsetRequest{topic: {kafkago.LastOffsetOf(po.Partition)}}}
			if _, err := cl.ListOffsets(ctx, one); err != nil {
				return nil, fmt.Errorf("kafka: offsets of %s from its leader, broker %s: %w; check that this machine reaches that address (the broker's advertised listener)",
					Stream(topic, po.Partition), leaders[po.Partition], err)
			}
		}
		if po.Error != nil {
			return nil, fmt.Errorf("kafka: offsets of %s/%d: %w", topic, po.Partition, po.Error)
		}
		out = append(out, PartitionOffsets{Partition: po.Partition, First: po.FirstOffset, End: po.LastOffset})
	}
	sortOffsets(out)
	return out, nil
}

// describeRefused asks a broker for the first partition's end offset of a topic missing from
// the client's metadata, and returns the broker's refusal if its ACLs do not let this client
// describe the topic (nil otherwise). kafka-go's Client answers Metadata from its cache of the
// broker's list of all topics, which leaves out without an error the topics the client may not
// describe, where a request naming the topic (as this ListOffsets does) is refused.
func describeRefused(ctx context.Context, cl *kafkago.Client, topic string) error {
	resp, err := cl.ListOffsets(ctx, &kafkago.ListOffsetsRequest{Topics: map[string][]kafkago.OffsetRequest{topic: {kafkago.LastOffsetOf(0)}}})
	if err != nil {
		return nil
	}
	for _, po := range resp.Topics[topic] {
		if refused(po.Error) {
			return po.Error
		}
	}
	return nil
}

func sortOffsets(o []PartitionOffsets) {
	for i := 1; i < len(o); i++ {
		for j := i; j > 0 && o[j].Partition < o[j-1].Partition; j-- {
			o[j], o[j-1] = o[j-1], o[j]
		}
	}
}

// Stream names a partition's stream in batches, rejects and salts: "topic/3".
func Stream(topic string, partition int) string { return topic + "/" + strconv.Itoa(partition) }

// DescribeGroup says what the broker reports of the consumer group: its state
// (PreparingRebalance, CompletingRebalance, Stable, Empty, Dead) and its members.
func (c *Config) DescribeGroup(ctx context.Context) (string, error) {
	cl, tr, err := c.Client()
	if err != nil {
		return "", err
	}
	defer tr.CloseIdleConnections()
	// the protocol's request through the transport, not Client.DescribeGroups: that decodes every
	// member's subscription, reads versions 0 and 1 only, and fails the whole answer for a member
	// of Kafka's own consumer, franz-go or librdkafka (versions 2 and 3: segmentio/kafka-go#1212,
	// open in v0.4.51); only the names are used
	m, err := tr.RoundTrip(ctx, cl.Addr, &describegroups.Request{Groups: []string{c.Group}})
	if err != nil {
		return "", fmt.Errorf("kafka: describe consumer group %s: %w", c.Group, err)
	}
	resp, ok := m.(*describegroups.Response)
	if !ok || len(resp.Groups) != 1 {
		return "", fmt.Errorf("kafka: describe consumer group %s: an answer of %T, not of one group", c.Group, m)
	}
	g := resp.Groups[0]
	if g.ErrorCode != 0 {
		return "", fmt.Errorf("kafka: describe consumer group %s: %w", c.Group, kafkago.Error(g.ErrorCode))
	}
	members := make([]string, 0, len(g.Members))
	for _, m := range g.Members {
		members = append(members, fmt.Sprintf("%s (client %s, host %s)", m.MemberID, m.ClientID, m.ClientHost))
	}
	sort.Strings(members)
	return fmt.Sprintf("state %s, %d members: %s", g.GroupState, len(members), strings.Join(members, ", ")), nil
}

// GroupOffsets returns the consumer group's committed offsets of the topic's partitions (the
// next offset it reads), by partition; a partition the group never committed is absent, and a
// group the broker never saw has none.
func (c *Config) GroupOffsets(ctx context.Context) (map[int]int64, error) {
	offs, err := c.Offsets(ctx)
	if err != nil {
		return nil, err
	}
	cl, tr, err := c.Client()
	if err != nil {
		return nil, err
	}
	defer tr.CloseIdleConnections()
	return groupOffsets(ctx, cl, c.Group, c.Topic, offs)
}

func groupOffsets(ctx context.Context, cl *kafkago.Client, group, topic string, offs []PartitionOffsets) (map[int]int64, error) {
	parts := make([]int, len(offs))
	for i, o := range offs {
		parts[i] = o.Partition
	}
	var resp *kafkago.OffsetFetchResponse
	err := coordinatorRetry(ctx, func() (err error) {
		resp, err = cl.OffsetFetch(ctx, &kafkago.OffsetFetchRequest{GroupID: group, Topics: map[string][]int{topic: parts}})
		if err == nil {
			err = resp.Error
		}
		if err == nil {
			for _, p := range resp.Topics[topic] {
				if coordinatorNotReady(p.Error) {
					return p.Error
				}
			}
		}
		return err
	})
	// a group never seen has no offsets (some brokers say so with GROUP_ID_NOT_FOUND)
	if errors.Is(err, kafkago.GroupIdNotFound) {
		return map[int]int64{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("kafka: committed offsets of consumer group %s on topic %s: %w", group, topic, err)
	}
	out := map[int]int64{}
	for _, p := range resp.Topics[topic] {
		if p.Error != nil {
			return nil, fmt.Errorf("kafka: committed offset of consumer group %s on %s: %w", group, Stream(topic, p.Partition), p.Error)
		}
		if p.CommittedOffset >= 0 {
			out[p.Partition] = p.CommittedOffset
		}
	}
	return out, nil
}

// brokerWait bounds how long a request waits for a broker that is not ready to answer it.
const brokerWait = 30 * time.Second

// coordinatorRetry runs fn again while the group's coordinator is not ready. A fresh broker
// creates its offsets topic on the first group request and answers requests for groups with
// NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS or COORDINATOR_NOT_AVAILABLE until it has loaded
// it (Kafka 4.4: the first `replicate --mark-start` of a fresh broker failed so); a coordinator
// moving to another broker does the same.
func coordinatorRetry(ctx context.Context, fn func() error) error {
	return retryWhile(ctx, coordinatorNotReady, fn)
}

// retryWhile runs fn again, backing off, while its error is one notReady says will pass; it gives
// up after brokerWait, or when ctx ends, with the last error.
func retryWhile(ctx context.Context, notReady func(error) bool, fn func() error) error {
	deadline := time.Now().Add(brokerWait)
	backoff := 50 * time.Millisecond
	for {
		err := fn()
		if err == nil || !notReady(err) || time.Now().After(deadline) {
			return err
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		backoff = min(2*backoff, time.Second)
	}
}

// leaderNotReady tells whether a partition's error means that its leader is not ready yet: a
// partition just created (Kafka 4 answers NOT_LEADER_OR_FOLLOWER for a moment after the topic's
// creation) or a leader moving to another broker.
func leaderNotReady(err error) bool {
	return errors.Is(err, kafkago.NotLeaderForPartition) || errors.Is(err, kafkago.LeaderNotAvailable) ||
		errors.Is(err, kafkago.FencedLeaderEpoch) || errors.Is(err, kafkago.UnknownLeaderEpoch) ||
		errors.Is(err, kafkago.OffsetNotAvailable)
}

func coordinatorNotReady(err error) bool {
	return errors.Is(err, kafkago.NotCoordinatorForGroup) || errors.Is(err, kafkago.GroupLoadInProgress) ||
		errors.Is(err, kafkago.GroupCoordinatorNotAvailable)
}

// ErrGroupHasOffsets is wrapped by MarkStart's error when the group already committed offsets
// for the topic: moving them would skip or replay changes.
var ErrGroupHasOffsets = errors.New("the consumer group already has committed offsets")

// MarkStart fixes where a new consumer group starts reading the topic: it commits the topic's
// end offsets now, for every partition, so that the group reads only the messages produced from
// now on (the capture point of a cut-over, fixed before the copy starts). A group that already
// has offsets for the topic is refused (ErrGroupHasOffsets), as is one with active members
// (the broker refuses a commit from outside the group's generation).
func (c *Config) MarkStart(ctx context.Context) ([]PartitionOffsets, error) {
	if c.Group == "" {
		return nil, errors.New("kafka: mark the start of a consumer group: name it (group=NAME)")
	}
	cl, tr, err := c.Client()
	if err != nil {
		return nil, err
	}
	defer tr.CloseIdleConnections()
	offs, err := c.topicOffsets(ctx, cl)
	if err != nil {
		return nil, err
	}
	committed, err := groupOffsets(ctx, cl, c.Group, c.Topic, offs)
	if err != nil {
		return nil, err
	}
	if len(committed) > 0 {
		held := make([]string, 0, len(committed))
		for p, o := range committed {
			held = append(held, fmt.Sprintf("partition %d at %d", p, o))
		}
		sort.Strings(held)
		return nil, fmt.Errorf("kafka: group %s, topic %s: %w (%s): marking the start again would skip or replay changes; "+
			"to start over, use a new group name", c.Group, c.Topic, ErrGroupHasOffsets, strings.Join(held, ", "))
	}
	commits := make([]kafkago.OffsetCommit, len(offs))
	for i, o := range offs {
		commits[i] = kafkago.OffsetCommit{Partition: o.Partition, Offset: o.End}
	}
	// generation -1 and no member: a commit from outside a group's generation, which the broker
	// accepts only while the group has no members
	var resp *kafkago.OffsetCommitResponse
	err = coordinatorRetry(ctx, func() (err error) {
		resp, err = cl.OffsetCommit(ctx, &kafkago.OffsetCommitRequest{GroupID: c.Group, GenerationID: -1, Topics: map[string][]kafkago.OffsetCommit{c.Topic: commits}})
		if err == nil {
			for _, p := range resp.Topics[c.Topic] {
				if coordinatorNotReady(p.Error) {
					return p.Error
				}
			}
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("kafka: commit the end offsets of %s for group %s: %w", c.Topic, c.Group, err)
	}
	for _, p := range resp.Topics[c.Topic] {
		if p.Error != nil {
			return nil, fmt.Errorf("kafka: commit the end offset of %s for group %s (is a member of the group running?): %w",
				Stream(c.Topic, p.Partition), c.Group, p.Error)
		}
	}
	return offs, nil
}
