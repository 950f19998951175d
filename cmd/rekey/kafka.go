package main

import (
	"strings"

	"github.com/rekey/rekey/source/kafka"
)

func isKafkaURI(uri string) bool { return strings.HasPrefix(uri, kafka.URIPrefix) }

// kafkaConfig parses a kafka:// URI, with the SASL password from the invocation's environment.
func (inv *invocation) kafkaConfig(uri string) (kafka.Config, error) {
	return kafka.ParseURI(uri, inv.getenv)
}
