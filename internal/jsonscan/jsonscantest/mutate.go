// Package jsonscantest helps the differential tests of jsonscan's users:
// it makes many near misses of the documents a fast path reads, for the
// test to check that whatever the fast path accepts, encoding/json reads
// the same.
package jsonscantest

import (
	"math/rand/v2"
	"reflect"
	"testing"
)

// Bits are JSON's characters and fragments that a fast path must refuse or
// read right: quotes, escapes, brackets, numbers of every form, null,
// non-ASCII and control bytes. Callers add their own keys.
var Bits = []string{`"`, `\`, `{`, `}`, `[`, `]`, `,`, `:`, ` `, "\t", "\n", `1`, `0`, `.5`, `e3`, `-`, `+`, `a`, `é`,
	"\x00", "\x7f", `null`, `"x"`, `\u0041`, `1e3`, `true`, `9999999999999999`}

// Mutants calls visit with n mutants of the docs: each a random doc with
// one to three bits inserted, a byte replaced by a bit, or a run cut.
func Mutants(seed uint64, docs, bits []string, n int, visit func(doc string)) {
	r := rand.New(rand.NewPCG(seed, seed+1))
	for range n {
		b := []byte(docs[r.IntN(len(docs))])
		for range 1 + r.IntN(3) {
			at := r.IntN(len(b) + 1)
			bit := bits[r.IntN(len(bits))]
			switch r.IntN(3) {
			case 0: // insert
				b = append(b[:at:at], append([]byte(bit), b[at:]...)...)
			case 1: // replace a byte
				if at < len(b) {
					b = append(b[:at:at], append([]byte(bit), b[at+1:]...)...)
				}
			default: // cut
				if at < len(b) {
					b = append(b[:at:at], b[at+1+r.IntN(len(b)-at):]...)
				}
			}
		}
		visit(string(b))
	}
}

// Agree decodes doc into a fresh T both ways and fails t unless they
// agree: a refusal by fast leaves the value untouched, and what fast
// accepts general accepts too, into an equal value. It reports whether
// fast accepted doc.
func Agree[T any](t testing.TB, doc string, fast func(*T, []byte) bool, general func([]byte, *T) error) bool {
	t.Helper()
	var f, zero T
	if !fast(&f, []byte(doc)) {
		if !reflect.DeepEqual(f, zero) {
			t.Fatalf("%q: refused, but wrote %+v", doc, f)
		}
		return false
	}
	var g T
	if err := general([]byte(doc), &g); err != nil {
		t.Fatalf("%q: the fast path accepted what the general way refuses: %v", doc, err)
	}
	if !reflect.DeepEqual(f, g) {
		t.Fatalf("%q: fast path %+v, general way %+v", doc, f, g)
	}
	return true
}
