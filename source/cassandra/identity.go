package cassandra

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"strconv"
	"time"

	"github.com/rekey/rekey/pipeline"
)

var (
	_ pipeline.Identifier      = (*Source)(nil)
	_ pipeline.IdentityAdopter = (*Source)(nil)
)

// Identity is the table, the token ring (a digest of every node's tokens), the split count and
// the shard: together they fix the sub-ranges the checkpoint's cursors belong to; and since=,
// when set.
func (s *Source) Identity() pipeline.Identity {
	id := pipeline.Identity{
		"table":  s.table.Keyspace + "." + s.table.Name,
		"ring":   ringDigest(s.ring),
		"splits": strconv.Itoa(s.splits),
		"shard":  s.cfg.Shard.String(),
	}
	if !s.cfg.Since.IsZero() {
		// a resume with another since would mix two catch-ups' rows
		id["since"] = s.cfg.Since.Format(time.RFC3339Nano)
	}
	return id
}

// AdoptIdentity takes over the recorded split count when the URI leaves splits to its default
// (8 x cores x nodes, so it differs on a machine with another core count) and the table, ring
// and shard are the same: the resumed run then reads the very sub-ranges of the first.
func (s *Source) AdoptIdentity(recorded pipeline.Identity) error {
	if s.cfg.Splits != 0 {
		return nil
	}
	now := s.Identity()
	if recorded["table"] != now["table"] || recorded["ring"] != now["ring"] || recorded["shard"] != now["shard"] || recorded["splits"] == now["splits"] {
		return nil
	}
	splits, err := strconv.Atoi(recorded["splits"])
	if err != nil || splits <= 0 {
		return fmt.Errorf("cassandra: the checkpoint's splits %q is not a count", recorded["splits"])
	}
	all, err := SplitRing(s.ring, splits)
	if err != nil {
		return fmt.Errorf("cassandra: split the ring as the first run did: %w", err)
	}
	s.splits, s.all, s.ranges = splits, all, takeShard(s.cfg.Shard, all)
	return nil
}

// ringDigest names a token ring: its token count and a digest of the sorted tokens.
func ringDigest(ring []int64) string {
	h := sha256.New()
	var b [8]byte
	for _, t := range ring {
		binary.BigEndian.PutUint64(b[:], uint64(t))
		h.Write(b[:])
	}
	return strconv.Itoa(len(ring)) + " tokens, " + hex.EncodeToString(h.Sum(nil)[:8])
}
