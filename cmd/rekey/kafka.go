package main

import (
	"context"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/source/kafka"
)

// kafkaSourceHelp is appended to the --source help of the commands that read sources.
const kafkaSourceHelp = `
  kafka://host1:9092,host2:9092/topic?format=json&start=earliest&max=N
                     a window of the messages a Kafka topic retains (report, migrate, check): from
                     the earliest offsets or the latest (start=latest: the last max messages),
                     never joining a group nor committing offsets. format=json (a row object per
                     message) or debezium (change events). SASL: sasl=plain|scram-sha-256|
                     scram-sha-512&user=U with the password in $` + kafka.PasswordEnv + ` (never in the URI);
                     TLS: tls=true&ca=FILE.
                     rekey replicate consumes a topic continuously with ?group=NAME`

func isKafkaURI(uri string) bool { return strings.HasPrefix(uri, "kafka://") }

// kafkaConfig parses a kafka:// URI, with the SASL password from the invocation's environment.
func (inv *invocation) kafkaConfig(uri string) (kafka.Config, error) {
	return kafka.ParseURI(uri, inv.getenv)
}

// openKafka opens the bounded window source of a kafka:// URI.
func (inv *invocation) openKafka(uri string, schema pipeline.SourceSchema, logger *zap.Logger) (pipeline.Source, error) {
	cfg, err := inv.kafkaConfig(uri)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return kafka.NewWindow(ctx, cfg, schema, logger.Named("source.kafka"))
}
