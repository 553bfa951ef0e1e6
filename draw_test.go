package boxoffice

import (
	"slices"
	"testing"
)

func TestDrawOrder(t *testing.T) {
	seed := make([]byte, DrawSeedSize)
	ids := make([]ID, 500)
	for i := range ids {
		ids[i] = ID(1<<62 + i*7)
	}
	got := DrawOrder(seed, ids)
	if len(got) != len(ids) {
		t.Fatalf("%d ids out of %d", len(got), len(ids))
	}
	sorted := slices.Clone(got)
	slices.Sort(sorted)
	if !slices.Equal(sorted, ids) {
		t.Fatal("the order is not a permutation of the entries")
	}
	if slices.Equal(got, ids) {
		t.Error("the draw kept arrival order")
	}
	// The order depends on the set, not on the order it comes in.
	rev := slices.Clone(ids)
	slices.Reverse(rev)
	if !slices.Equal(DrawOrder(seed, rev), got) {
		t.Error("the same entries in another order drew differently")
	}
	// Another seed, another order; one more entry moves everyone's key.
	other := slices.Clone(seed)
	other[0] = 1
	if slices.Equal(DrawOrder(other, ids), got) {
		t.Error("two seeds gave one order")
	}
	more := DrawOrder(seed, append(slices.Clone(ids), 42))
	without := slices.DeleteFunc(slices.Clone(more), func(id ID) bool { return id == 42 })
	if slices.Equal(without, got) {
		t.Error("an added entry left the others' relative order as it was: the entries are not mixed in")
	}
	// A known vector, so that an outside verifier can test itself.
	if c := DrawCommitment(seed); c != "66687aadf862bd776c8fc18b8e9f8e20089714856ee233b3902a591d0d5f2925" {
		t.Errorf("commitment of 32 zero bytes: %s", c)
	}
}

func TestApplyDrawRefusesWhatIsNotAPermutation(t *testing.T) {
	ids := []ID{1, 2, 3}
	for name, draw := range map[string]func([]ID) []ID{
		"short":     func(ids []ID) []ID { return ids[:2] },
		"duplicate": func(ids []ID) []ID { return []ID{1, 1, 2} },
		"stranger":  func(ids []ID) []ID { return []ID{1, 2, 4} },
	} {
		if _, err := ApplyDraw(draw, ids); ErrorCode(err) != EINTERNAL {
			t.Errorf("%s: %v, want EINTERNAL", name, err)
		}
	}
	out, err := ApplyDraw(func(ids []ID) []ID { slices.Reverse(ids); return ids }, ids)
	if err != nil || !slices.Equal(out, []ID{3, 2, 1}) || !slices.Equal(ids, []ID{1, 2, 3}) {
		t.Errorf("reverse: %v, %v (input %v)", out, err, ids)
	}
}
