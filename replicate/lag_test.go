package replicate_test

import (
	"net/http/httptest"
	"testing"
	"time"

	"github.com/rekey/rekey/replicate"
	"github.com/rekey/rekey/sink/sqlsink"
	"github.com/rekey/rekey/sink/sqlsink/mysqlsql"
	"github.com/rekey/rekey/sink/sqlsink/mysqltest"
	"github.com/rekey/rekey/source/kafka/kafkatest"
)

// The cut-over runbook drains replicate by waiting, after the writes stopped, for
// rekey_consumer_lag 0 on every partition, then stops it. The lag was the high watermark that came
// with the last fetch minus the next offset: messages produced after that fetch read as no lag
// until the next fetch was applied, so a drain stopped replicate before it applied the last
// changes (a hand rehearsal ended with the table holding a key's older value). Here messages are
// produced right after the first batch is applied, and /metrics is scraped while the batch holding
// them is applied but not yet committed: the lag must count them.
func TestConsumerLagCountsMessagesProducedAfterTheLastFetch(t *testing.T) {
	c := kafkatest.Start(t)
	topic := c.CreateTopic(t, "orders-lag", 1)
	msgs, _, _ := jsonStream(1, 10)
	c.Produce(t, topic, msgs[:5]...)

	db := mysqltest.GMS(t)
	cfg := config(t, c, topic, "g-lag", "json", t.TempDir())
	db.Exec(t, mysqlsql.DDL(cfg.Program.Target(), mysqlsql.KeyCollations[db.DDLDialect()]))
	target, err := sqlsink.ParseURI(db.URI(""), func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	cfg.SQL = sqlsink.Config{Target: target, Conns: 1}
	held, release := make(chan struct{}), make(chan struct{})
	cfg.Hooks.Commit = func(s replicate.CommitStep, _ int, first, last int64) error {
		switch {
		case s == replicate.StepOffset && last == 4:
			// the producers write on while the first batch is committed
			c.Produce(t, topic, msgs[5:]...)
		case s == replicate.StepApplied && first == 5:
			close(held)
			<-release
		}
		return nil
	}
	rn := start(t, cfg)
	<-held
	srv := httptest.NewServer(rn.r.Handler())
	fams := scrape(t, srv.URL+"/metrics")
	srv.Close()
	close(release)
	// offsets 5..9 are produced and not yet committed: 5 messages to go
	if got := metricValue(t, fams, "rekey_consumer_lag", map[string]string{"topic": topic, "partition": "0"}); got != 5 {
		t.Errorf("rekey_consumer_lag = %v while offsets 5..9 are not applied, want 5: a drain waiting for 0 would stop replicate before them", got)
	}
	waitCommitted(t, c, "g-lag", topic, endOffsets(t, c, topic), 60*time.Second)
	srv = httptest.NewServer(rn.r.Handler())
	fams = scrape(t, srv.URL+"/metrics")
	srv.Close()
	if got := metricValue(t, fams, "rekey_consumer_lag", map[string]string{"topic": topic, "partition": "0"}); got != 0 {
		t.Errorf("rekey_consumer_lag = %v after every message is committed, want 0", got)
	}
	if err := rn.shutdown(t); err != nil {
		t.Fatal(err)
	}
}
