package kafka

import (
	"context"
	"fmt"
	"time"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/source"
	"github.com/rekey/rekey/source/sourceuri"
)

// URIPrefix starts every Kafka --source URI.
const URIPrefix = "kafka://"

// Kind is the Kafka source for the command line: a bounded window of a topic (report, migrate,
// check); rekey replicate consumes the topic with a group instead.
var Kind = source.Kind{
	Prefix:    URIPrefix,
	Tables:    true,
	Unsharded: "a Kafka topic is not read in shards: its window is read by one run (replicate scales by consumer group instead); drop --shard",
	Help: `  kafka://host1:9092,host2:9092/topic?format=json&start=earliest&max=N
                     a window of the messages a Kafka topic retains (report, migrate, check): from
                     the earliest offsets or the latest (start=latest: the last max messages),
                     never joining a group nor committing offsets. format=json (a row object per
                     message) or debezium (change events). SASL: sasl=plain|scram-sha-256|
                     scram-sha-512&user=U with the password in $` + PasswordEnv + ` (never in the URI);
                     TLS: tls=true&ca=FILE.
                     rekey replicate consumes a topic continuously with ?group=NAME`,
	Open: func(ctx context.Context, uri string, in source.Input) (pipeline.Source, error) {
		cfg, err := ParseURI(uri, in.Getenv)
		if err != nil {
			return nil, err
		}
		// the window never joins a group: a group= would be ignored
		if cfg.Group != "" {
			return nil, fmt.Errorf("kafka source %q: group=%s: a window of a topic (report, migrate, check) is read without joining a consumer group "+
				"or committing offsets; group= names the group of rekey replicate (and, for verify against the table replicate writes, whose committed offsets to check up to): drop group=",
				sourceuri.Redact(uri), cfg.Group)
		}
		// without max= the latest messages are every message retained: start=latest would do nothing
		if cfg.Start == StartLatest && cfg.Max == 0 {
			return nil, fmt.Errorf("kafka source %q: start=latest reads the last max= messages, and without max= the window is every message retained, as start=earliest reads it: "+
				"give max=N, or drop start=latest", sourceuri.Redact(uri))
		}
		// the offsets lookup is bounded, and ends with the command's context (Ctrl-C)
		ctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		if in.SourceTable != "" && cfg.Format != FormatDebezium {
			return nil, fmt.Errorf("kafka source %q: the mapping's source.table (%s) names the table of a topic of Debezium change events, whose source names their table; "+
				"format=%s rows name none: read the topic with format=debezium, or drop source.table", sourceuri.Redact(uri), in.SourceTable, cfg.Format)
		}
		w, err := NewWindow(ctx, cfg, in.Schema, in.Logger.Named("source.kafka"))
		if err != nil {
			return nil, err
		}
		w.Table = in.SourceTable
		if in.Memory > 0 {
			w.SampleBytes = in.Memory / 16 // as a file's sample: the rows made of it take as much again
		}
		return w, nil
	},
}
