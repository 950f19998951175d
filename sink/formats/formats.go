// Package formats is the set of data file formats rekey is built with, each with its writer and
// its reader (a files.Format does both, as arrow's pqarrow keeps them together). Commands pick
// one by --format, verify by the name an output's manifest records. A new format is its folder
// under sink/ and one line here, which says, too, how Lindorm's bulkload job reads it (LoadAs:
// migrate refuses a format the job cannot read before it reads a row).
package formats

import (
	"strings"

	"github.com/rekey/rekey/sink/csv"
	"github.com/rekey/rekey/sink/files"
	"github.com/rekey/rekey/sink/parquet"
)

// format is one registered format: how to make it, its words in --format's help, and the
// fileType of Lindorm's bulkload API that reads its files ("": the job cannot read them).
type format struct {
	name   string
	help   string
	loadAs string
	new    func() files.Format
}

// all is every format, the default first.
var all = []format{
	{"parquet", "parquet (zstd)", "Parquet", func() files.Format { return parquet.New() }},
	{"csv", "csv", "CSV", func() files.Format { return csv.New() }},
}

// Default is the format a command writes without --format, and the one an output's manifest
// means when it names none (rekey wrote only Parquet before it recorded the format).
func Default() string { return all[0].name }

// Get returns a new format named name, with its defaults; false when there is none (the caller
// says where the name came from and lists Names).
func Get(name string) (files.Format, bool) {
	for _, f := range all {
		if f.name == name {
			return f.new(), true
		}
	}
	return nil, false
}

// LoadAs is the fileType, as Lindorm's bulkload API spells it ("Parquet"), under which the job
// reads files of the format named name; "" when the job cannot read them or there is no such
// format.
func LoadAs(name string) string {
	for _, f := range all {
		if f.name == name {
			return f.loadAs
		}
	}
	return ""
}

// Loadable lists the formats the bulkload job reads, joined as a sentence does with conj.
func Loadable(conj string) string {
	var names []string
	for _, f := range all {
		if f.loadAs != "" {
			names = append(names, f.name)
		}
	}
	return join(names, conj)
}

// Names lists the formats' names joined as a sentence does with conj: "parquet or csv".
func Names(conj string) string {
	names := make([]string, len(all))
	for i, f := range all {
		names[i] = f.name
	}
	return join(names, conj)
}

// Help is --format's usage: "data file format: parquet (zstd) or csv".
func Help() string {
	words := make([]string, len(all))
	for i, f := range all {
		words[i] = f.help
	}
	return "data file format: " + join(words, "or")
}

func join(words []string, conj string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " " + conj + " " + words[len(words)-1]
}
