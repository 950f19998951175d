package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
	"go.uber.org/zap"

	"github.com/rekey/rekey/sink/lindorm"
)

// ltsFlags are the LTS bulkload job's names and resources, written to bulkload.json.
type ltsFlags struct {
	source, target string
	namespace      string
	driverSpec     string
	instances      int
}

// ltsFlagNames are the bulkload job's flags.
var ltsFlagNames = []string{"lts-source", "lts-target", "namespace", "lts-driver-spec", "lts-instances"}

func addLTSFlags(fl *pflag.FlagSet, f *ltsFlags) {
	fl.StringVar(&f.source, "lts-source", "", "bulkload.json src: the LTS data source (OSS or HDFS) that holds the output")
	fl.StringVar(&f.target, "lts-target", "", "bulkload.json dst: the LTS data source of the LindormTable instance")
	fl.StringVar(&f.namespace, "namespace", "default", "the Lindorm namespace (database) of the table")
	fl.StringVar(&f.driverSpec, "lts-driver-spec", "large", "bulkload.json driverSpec: small, medium, large (what the docs advise) or xlarge")
	fl.IntVar(&f.instances, "lts-instances", 0, "bulkload.json instances: Spark executors of the job, 4 tasks each (0: one per 4 regions, at most 32)")
}

// options validates the flags and returns the job options they give (format, output and
// regions are the caller's).
func (f *ltsFlags) options() (lindorm.JobOptions, error) {
	switch f.driverSpec {
	case "small", "medium", "large", "xlarge":
	default:
		return lindorm.JobOptions{}, fmt.Errorf("--lts-driver-spec %q: want small, medium, large or xlarge", f.driverSpec)
	}
	if f.instances < 0 {
		return lindorm.JobOptions{}, fmt.Errorf("--lts-instances %d: want a number of executors, or 0 for one per 4 regions", f.instances)
	}
	if strings.TrimSpace(f.namespace) == "" {
		return lindorm.JobOptions{}, fmt.Errorf("--namespace is empty: give the table's namespace (default: default)")
	}
	return lindorm.JobOptions{Source: f.source, Target: f.target, Namespace: f.namespace,
		DriverSpec: f.driverSpec, Instances: f.instances}, nil
}

// resumed is the job a resume writes: the first attempt's settings (kept in its checkpoint),
// each flag given now in place of its own, with a warning where the two differ. A resume is
// run as the same command again, but one given without these flags wrote bulkload.json with
// the default namespace and placeholders for the data sources.
func (f *ltsFlags) resumed(then, now lindorm.JobOptions, given []string, log *zap.Logger) lindorm.JobOptions {
	job := then
	for _, name := range given {
		var was, is string
		switch name {
		case "--lts-source":
			was, is, job.Source = then.Source, now.Source, now.Source
		case "--lts-target":
			was, is, job.Target = then.Target, now.Target, now.Target
		case "--namespace":
			was, is, job.Namespace = then.Namespace, now.Namespace, now.Namespace
		case "--lts-driver-spec":
			was, is, job.DriverSpec = then.DriverSpec, now.DriverSpec, now.DriverSpec
		case "--lts-instances":
			was, is, job.Instances = strconv.Itoa(then.Instances), strconv.Itoa(now.Instances), now.Instances
		}
		if was != is {
			log.Warn("the bulkload job takes the value given now, not the one the run began with", zap.String("flag", name), zap.String("then", was), zap.String("now", is))
		}
	}
	return job
}
