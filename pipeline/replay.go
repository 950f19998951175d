package pipeline

// ReplayFile says how a source's rejected records are written back in the input's own format
// (a CSV header and lines, JSON Lines), so that once the cause is fixed a migrate of that file
// runs exactly those rows again. The output names the file (package output).
type ReplayFile struct {
	Ext    string // the input's file extension, without the dot: "csv", "tsv", "jsonl"
	Header string // written at the top of the file (a CSV header line with its newline), or ""
}

// Replayer is implemented by sources whose Record.Raw is a whole input record in the input's
// format; ok is false when this input cannot be replayed as one file.
type Replayer interface {
	ReplayFile() (f ReplayFile, ok bool)
}
