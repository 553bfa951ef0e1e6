package redis

import (
	"fmt"
	"strconv"
	"testing"
)

// keySlot is Redis Cluster's: the slots CLUSTER KEYSLOT answers in its
// documentation, and the hash tag rules (the first '{' and the next '}',
// an empty tag hashing the whole key).
func TestKeySlot(t *testing.T) {
	for key, want := range map[string]int{
		"somekey":         11058,
		"foo{hash_tag}":   2515,
		"{hash_tag}":      2515,
		"x{hash_tag}y{z}": 2515,
		"foo{}{hash_tag}": int(crc16("foo{}{hash_tag}")) % hashSlots,
		"foo{{bar}}zap":   int(crc16("{bar")) % hashSlots,
		"foo{bar":         int(crc16("foo{bar")) % hashSlots,
	} {
		if got := keySlot(key); got != want {
			t.Errorf("keySlot(%q) = %d, want %d", key, got, want)
		}
	}
}

// releaseExecs puts every lease in exactly one script call, with its own
// token; a cluster's calls each hold one hash slot; none holds more than
// releaseChunk keys; a single server needs no more calls than chunks.
func TestReleaseExecs(t *testing.T) {
	var keys, tokens []string
	for i := range 450 {
		keys = append(keys, fmt.Sprintf("p:lease:reserve:user-%d:key-%d", i%37, i))
		tokens = append(tokens, "t"+strconv.Itoa(i))
	}
	keys = append(keys, "p:lease:{same}:1", "p:lease:{same}:2")
	tokens = append(tokens, "s1", "s2")
	for _, cluster := range []bool{false, true} {
		execs := releaseExecs(keys, tokens, cluster)
		seen := map[string]string{}
		for _, e := range execs {
			if len(e.Keys) == 0 || len(e.Keys) > releaseChunk || len(e.Keys) != len(e.Args) {
				t.Fatalf("cluster %v: a call of %d keys and %d tokens", cluster, len(e.Keys), len(e.Args))
			}
			for i, k := range e.Keys {
				if cluster && keySlot(k) != keySlot(e.Keys[0]) {
					t.Errorf("cluster: one call holds slots %d and %d", keySlot(e.Keys[0]), keySlot(k))
				}
				if _, dup := seen[k]; dup {
					t.Errorf("cluster %v: %s released twice", cluster, k)
				}
				seen[k] = e.Args[i]
			}
		}
		for i, k := range keys {
			if seen[k] != tokens[i] {
				t.Errorf("cluster %v: %s released with %q, want %q", cluster, k, seen[k], tokens[i])
			}
		}
		if !cluster && len(execs) != 3 {
			t.Errorf("a single server: %d calls for %d leases, want 3", len(execs), len(keys))
		}
	}
}
