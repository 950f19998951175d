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
