package boxoffice

import (
	"bytes"
	"cmp"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"time"
)

// The draw of a queued sale's pre-queue (the waiting room before the sale
// opens) is random and can be checked by anyone:
//
//  1. When the event is created, a 32-byte seed is drawn from crypto/rand
//     and kept secret; its SHA-256, the commitment, is published on the
//     event (GET /events/{id}/draw) from then on, before anyone can join
//     the waiting room.
//  2. At the opening, the requests waiting are ordered by DrawOrder from
//     the seed and their request ids, and given positions in that order.
//  3. After the draw the seed and the request ids in drawn order are
//     published. Anyone can check that the seed hashes to the
//     commitment and recompute the order (boxoffice verify-draw); a buyer
//     can also find their own request id at their position.
//
// The order mixes the seed with the list of every entry, so an operator
// who knows the seed cannot place a request by choosing its id when it is
// admitted: every later entry changes every key. What it cannot prove is
// that no entry is fake; the list and its size are public.

// DrawSeedSize is the size of a draw's seed in bytes.
const DrawSeedSize = 32

// Draw is an event's pre-queue draw: the seed committed to at the event's
// creation and, once drawn, the order it gave.
type Draw struct {
	EventID ID
	// Seed is secret until the draw (DrawnAt set).
	Seed []byte
	// Commitment is DrawCommitment(Seed), what is published while the
	// seed is withheld (sale.Service.Draw fills it; stores leave it).
	Commitment string
	// CommittedAt is when the seed was fixed: the event's creation, or the
	// draw itself for an event created before draws were committed to.
	CommittedAt time.Time
	// DrawnAt is zero until the draw; then Order lists the request ids in
	// drawn order, Order[i] at position FirstPosition+i. A 0 in Order is a
	// position inside the draw's range that went to a request outside it:
	// on a queue spread over several slots (redis.QueueState.Slots), each
	// slot gives its own positions, and a slot whose share of the
	// pre-queue was small goes on with later arrivals while the others'
	// drawn requests still come.
	DrawnAt       time.Time
	FirstPosition int64
	Order         []ID
}

// NewDrawSeed returns a fresh secret seed.
func NewDrawSeed() []byte {
	seed := make([]byte, DrawSeedSize)
	_, _ = rand.Read(seed) // crypto/rand.Read never fails (Go 1.24+)
	return seed
}

// Drawn reports whether the draw took place.
func (d *Draw) Drawn() bool { return !d.DrawnAt.IsZero() }

// DrawCommitment is the published commitment to a seed: its SHA-256, hex.
func DrawCommitment(seed []byte) string {
	sum := sha256.Sum256(seed)
	return hex.EncodeToString(sum[:])
}

// DrawEntriesHash is the SHA-256 of a draw's entries: the request ids in
// decimal, sorted as numbers, each followed by a newline. Zeros (a Draw's
// gaps) are not entries.
func DrawEntriesHash(ids []ID) [32]byte {
	sorted := DrawEntries(ids)
	slices.Sort(sorted)
	h := sha256.New()
	var buf []byte
	for _, id := range sorted {
		buf = strconv.AppendInt(buf[:0], int64(id), 10)
		buf = append(buf, '\n')
		h.Write(buf)
	}
	var sum [32]byte
	h.Sum(sum[:0])
	return sum
}

// DrawEntries returns a copy of a draw's order without its gaps (zeros).
func DrawEntries(order []ID) []ID {
	out := make([]ID, 0, len(order))
	for _, id := range order {
		if id != 0 {
			out = append(out, id)
		}
	}
	return out
}

// DrawOrder returns ids in drawn order: by key(id) = SHA-256(K || id in
// decimal), ascending, where K = SHA-256(seed || DrawEntriesHash(ids));
// equal keys (never seen) fall back to the smaller id. The order depends
// on the set of ids, not on the order they are given in.
func DrawOrder(seed []byte, ids []ID) []ID {
	entries := DrawEntriesHash(ids)
	k := sha256.Sum256(append(slices.Clone(seed), entries[:]...))
	type keyed struct {
		id  ID
		key [32]byte
	}
	ks := make([]keyed, len(ids))
	buf := append([]byte(nil), k[:]...)
	for i, id := range ids {
		buf = strconv.AppendInt(buf[:len(k)], int64(id), 10)
		ks[i] = keyed{id, sha256.Sum256(buf)}
	}
	slices.SortFunc(ks, func(a, b keyed) int {
		if c := bytes.Compare(a.key[:], b.key[:]); c != 0 {
			return c
		}
		return cmp.Compare(a.id, b.id)
	})
	out := make([]ID, len(ks))
	for i, k := range ks {
		out[i] = k.id
	}
	return out
}

// ApplyDraw runs draw over ids and checks that it returned each of them
// once: what every QueueState.Open does before giving positions.
func ApplyDraw(draw func(ids []ID) []ID, ids []ID) ([]ID, error) {
	out := draw(slices.Clone(ids))
	if len(out) != len(ids) {
		return nil, Errorf(EINTERNAL, "the draw returned %d of %d requests", len(out), len(ids))
	}
	seen := make(map[ID]bool, len(ids))
	for _, id := range ids {
		seen[id] = true
	}
	for _, id := range out {
		if !seen[id] {
			return nil, Errorf(EINTERNAL, "the draw returned request %d twice or out of nowhere", id)
		}
		delete(seen, id)
	}
	return out, nil
}

// EncodeDrawOrder is how the stores keep a draw's order: 8 bytes an id,
// big-endian, so that a million requests are 8 MB in one value. Never nil,
// so that an empty order is an empty value, not NULL.
func EncodeDrawOrder(ids []ID) []byte {
	b := make([]byte, 0, 8*len(ids))
	for _, id := range ids {
		b = binary.BigEndian.AppendUint64(b, uint64(id))
	}
	return b
}

// DecodeDrawOrder reads an order EncodeDrawOrder wrote.
func DecodeDrawOrder(b []byte) ([]ID, error) {
	if len(b)%8 != 0 {
		return nil, fmt.Errorf("a draw's order is %d bytes, not a multiple of 8", len(b))
	}
	ids := make([]ID, len(b)/8)
	for i := range ids {
		ids[i] = ID(binary.BigEndian.Uint64(b[8*i:]))
	}
	return ids, nil
}
