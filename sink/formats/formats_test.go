package formats

import "testing"

// Every listed format is got by its name, the default first; an unknown name is not; the help
// and the lists name every format.
func TestFormatsByName(t *testing.T) {
	for _, f := range all {
		got, ok := Get(f.name)
		if !ok || got.Name() != f.name {
			t.Errorf("Get(%q) = %v, %v", f.name, got, ok)
		}
	}
	if _, ok := Get("orc"); ok {
		t.Error("Get(orc): a format rekey is not built with")
	}
	if Default() != "parquet" {
		t.Errorf("Default() = %q", Default())
	}
	if got, want := Help(), "data file format: parquet (zstd) or csv"; got != want {
		t.Errorf("Help() = %q, want %q", got, want)
	}
	if got, want := Names("and"), "parquet and csv"; got != want {
		t.Errorf("Names(and) = %q, want %q", got, want)
	}
	if got, want := join([]string{"a", "b", "c"}, "or"), "a, b or c"; got != want {
		t.Errorf("join = %q, want %q", got, want)
	}
}

// A format says under which fileType Lindorm's bulkload job reads it, spelled as the API
// documents it; a format without one, or no format, is one the job cannot read, and is left out
// of the formats migrate offers for a bulk load.
func TestFormatsDeclareTheirBulkloadFileType(t *testing.T) {
	for name, want := range map[string]string{"parquet": "Parquet", "csv": "CSV", "orc": "", "": ""} {
		if got := LoadAs(name); got != want {
			t.Errorf("LoadAs(%q) = %q, want %q", name, got, want)
		}
	}
	if got, want := Loadable("or"), "parquet or csv"; got != want {
		t.Errorf("Loadable(or) = %q, want %q", got, want)
	}
	defer func(saved []format) { all = saved }(all)
	all = append(all[:len(all):len(all)], format{name: "jsonl", help: "jsonl"})
	if LoadAs("jsonl") != "" || Loadable("or") != "parquet or csv" {
		t.Errorf("a format with no fileType: LoadAs %q, Loadable %q", LoadAs("jsonl"), Loadable("or"))
	}
}
