package gen

import (
	"context"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/source"
)

// Kind is the generator for the command line: gen:NAME?rows=N&seed=S.
var Kind = source.Kind{
	Prefix: "gen:",
	Help: `  gen:NAME?rows=N&seed=S
                     synthetic data for demos and benchmarks (orders, logs, transactions)`,
	Open: func(_ context.Context, uri string, in source.Input) (pipeline.Source, error) {
		cfg, err := ParseURI(uri)
		if err != nil {
			return nil, err
		}
		cfg.Shard = in.Shard
		return New(cfg, in.Schema, in.Logger.Named("source.gen"))
	},
}
