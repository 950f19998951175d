package pipeline

import (
	"fmt"
	"sort"
	"strings"
)

// Identity says which input a source reads, as stable name -> value pairs (a file's path, size
// and modification time; a table and its split plan; a topic and its partitions). A checkpoint
// records it, and a resume is refused when the source no longer has the same identity: another
// file, or the same name with other content, would otherwise be resumed mid-way and mixed with
// what the first run wrote.
type Identity map[string]string

// Identifier is implemented by sources that can say what they read.
type Identifier interface {
	Identity() Identity
}

// IdentityAdopter is implemented by sources whose identity depends on defaults that may differ
// between machines (a Cassandra split count derived from the core count): before a resume is
// checked, the source takes over what the recorded identity fixed, where its own configuration
// left it open.
type IdentityAdopter interface {
	AdoptIdentity(recorded Identity) error
}

// SourceIdentity is src's identity, or nil when it cannot tell.
func SourceIdentity(src Source) Identity {
	if id, ok := src.(Identifier); ok {
		return id.Identity()
	}
	return nil
}

// Diff lists, one line per name in sorted order, how now differs from the recorded identity:
// `size: 1048576 then, 2097152 now`. Empty when they match.
func (recorded Identity) Diff(now Identity) []string { return recorded.DiffNamed(now, "then", "now") }

// DiffNamed is Diff with the two sides named for people: with "in shard 0/2" and "here",
// `rows: 400000 in shard 0/2, 500000 here`.
func (recorded Identity) DiffNamed(now Identity, then, here string) []string {
	names := make(map[string]bool, len(recorded)+len(now))
	for k := range recorded {
		names[k] = true
	}
	for k := range now {
		names[k] = true
	}
	sorted := make([]string, 0, len(names))
	for k := range names {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	var diffs []string
	for _, k := range sorted {
		a, hadA := recorded[k]
		b, hasB := now[k]
		switch {
		case hadA && hasB && a == b:
		case !hadA:
			diffs = append(diffs, fmt.Sprintf("%s: not recorded %s, %s %s", k, then, b, here))
		case !hasB:
			diffs = append(diffs, fmt.Sprintf("%s: %s %s, absent %s", k, a, then, here))
		default:
			diffs = append(diffs, fmt.Sprintf("%s: %s %s, %s %s", k, a, then, b, here))
		}
	}
	return diffs
}

// String renders the identity on one line, names sorted.
func (id Identity) String() string {
	keys := make([]string, 0, len(id))
	for k := range id {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(k + "=" + id[k])
	}
	return b.String()
}

// WithoutShard is the identity without what differs between the shards of one source read with
// --shard i/N: the shard, and which files each one read (files, file[NAME].*). The shards of one
// migration have the same.
func (id Identity) WithoutShard() Identity {
	out := make(Identity, len(id))
	for k, v := range id {
		if k != "shard" && k != "files" && !strings.HasPrefix(k, "file[") {
			out[k] = v
		}
	}
	return out
}
