//go:build rekeydeps

// Package rekey pins module dependencies that later packages build on, so that concurrent work
// on different packages never needs to edit go.mod at the same time.
package rekey

import (
	_ "github.com/apache/arrow/go/v15/parquet/pqarrow"
	_ "github.com/axiomhq/hyperloglog"
	_ "github.com/gocql/gocql"
	_ "github.com/klauspost/compress/zstd"
	_ "github.com/parquet-go/parquet-go"
	_ "github.com/schollz/progressbar/v3"
	_ "github.com/segmentio/kafka-go"
	_ "github.com/spf13/cobra"
	_ "github.com/twmb/franz-go/pkg/kfake"
	_ "go.uber.org/zap"
	_ "golang.org/x/sync/errgroup"
	_ "golang.org/x/term"
	_ "gopkg.in/yaml.v3"
)
