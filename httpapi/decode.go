package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"mime"
	"net"
	"net/http"
	"reflect"
	"strings"
	"sync"

	"github.com/boxoffice/boxoffice"
)

// MaxBodyBytes bounds every request body; an event layout is the largest
// legitimate one and stays far below it.
const MaxBodyBytes = 64 << 10

// decodeJSON reads exactly one JSON object from r's body into v, refusing
// unknown fields, trailing data and oversized bodies, each with a clear
// problem. The body is read as JSON whatever its Content-Type says, so
// that a plain `curl -d` works; a form or multipart upload is refused.
func decodeJSON(w http.ResponseWriter, r *http.Request, v any) error {
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt == "multipart/form-data" {
		return &boxoffice.Error{Code: codeUnsupported, Message: "send the body as application/json"}
	}
	body := http.MaxBytesReader(w, r.Body, MaxBodyBytes)
	return decodeBytesOrReader(body, v)
}

var bodyBufs = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// decodeBytesOrReader is the decoding rule itself, shared with the fuzz
// tests.
func decodeBytesOrReader(rd io.Reader, v any) error {
	// The body is read into a pooled buffer: both ways of decoding copy
	// what they keep out of it.
	buf := bodyBufs.Get().(*bytes.Buffer)
	buf.Reset()
	defer func() {
		if buf.Cap() <= 64<<10 {
			bodyBufs.Put(buf)
		}
	}()
	if _, err := buf.ReadFrom(rd); err != nil { // bounded by the caller (MaxBytesReader)
		return jsonError(err)
	}
	body := buf.Bytes()
	if f, ok := v.(fastDecoder); ok && f.decodeFast(body) {
		return nil
	}
	return decodeBody(body, v)
}

// decodeBody is the general way: encoding/json, then exactNames.
func decodeBody(body []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return jsonError(err)
	}
	if err := dec.Decode(&struct{}{}); !errors.Is(err, io.EOF) {
		return boxoffice.Errorf(boxoffice.EINVALID, "the body must hold exactly one JSON object")
	}
	// encoding/json matches field names case-insensitively; the API's
	// names are exact (the OpenAPI says additionalProperties: false).
	return exactNames(body, reflect.TypeOf(v))
}

// exactNames checks that every key of every JSON object in raw is the
// exact name of a field of t (or of the type t holds at that place). raw
// has been decoded already, so it is one valid JSON value: the check is one
// pass over its bytes, without decoding it a second time (that was half of
// a reserve's decoding cost).
func exactNames(raw []byte, t reflect.Type) error {
	w := nameWalker{raw: raw}
	return w.value(t)
}

// nameWalker walks a valid JSON value, checking object keys against the
// types they decode into. path holds the keys and indexes down to the
// current value, turned into text only for an error.
type nameWalker struct {
	raw  []byte
	i    int
	path []pathStep
}

type pathStep struct {
	key   []byte // nil for an array element
	index int
}

func (w *nameWalker) space() {
	for w.i < len(w.raw) {
		switch w.raw[w.i] {
		case ' ', '\t', '\n', '\r':
			w.i++
		default:
			return
		}
	}
}

// value walks the value at w.i; t is the type it decodes into, nil when
// nothing below it has names to check.
func (w *nameWalker) value(t reflect.Type) error {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t != nil && reflect.PointerTo(t).Implements(unmarshalerType) {
		t = nil // its own names
	}
	w.space()
	if w.i >= len(w.raw) {
		return nil
	}
	switch w.raw[w.i] {
	case '{':
		var fields map[string]reflect.Type
		var elem reflect.Type
		if t != nil {
			switch t.Kind() {
			case reflect.Struct:
				fields = jsonFields(t)
			case reflect.Map:
				elem = t.Elem()
			}
		}
		w.i++
		for w.more('}') {
			key := w.str()
			w.space()
			w.i++ // the colon
			ft := elem
			if fields != nil {
				var ok bool
				if ft, ok = fields[string(key)]; !ok {
					return boxoffice.Errorf(boxoffice.EINVALID, "unknown field %q (names are case-sensitive)", w.where(key))
				}
			}
			if err := w.under(pathStep{key: key}, ft); err != nil {
				return err
			}
		}
	case '[':
		var elem reflect.Type
		if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
			elem = t.Elem()
		}
		w.i++
		for n := 0; w.more(']'); n++ {
			if err := w.under(pathStep{index: n}, elem); err != nil {
				return err
			}
		}
	case '"':
		w.str()
	default: // a number, true, false or null
		for w.i < len(w.raw) && !strings.ContainsRune(",]} \t\n\r", rune(w.raw[w.i])) {
			w.i++
		}
	}
	return nil
}

// more steps over the comma before the next member of an object or array
// and says whether there is one; at the end it steps over end.
func (w *nameWalker) more(end byte) bool {
	w.space()
	if w.i >= len(w.raw) || w.raw[w.i] == end {
		w.i++
		return false
	}
	if w.raw[w.i] == ',' {
		w.i++
		w.space()
	}
	return true
}

// under walks the value at w.i as the step below the current path.
func (w *nameWalker) under(step pathStep, t reflect.Type) error {
	w.path = append(w.path, step)
	err := w.value(t)
	w.path = w.path[:len(w.path)-1]
	return err
}

// str reads the string at w.i and returns its text: the raw bytes, or,
// when it has escapes, their decoding.
func (w *nameWalker) str() []byte {
	start := w.i + 1
	escaped := false
	for w.i = start; w.i < len(w.raw) && w.raw[w.i] != '"'; w.i++ {
		if w.raw[w.i] == '\\' {
			escaped = true
			w.i++
		}
	}
	text := w.raw[start:min(w.i, len(w.raw))]
	w.i++
	if escaped {
		var s string
		if json.Unmarshal(w.raw[start-1:w.i], &s) == nil {
			return []byte(s)
		}
	}
	return text
}

// where is the path to key, as "best.quantity" or "list[1].quantity".
func (w *nameWalker) where(key []byte) string {
	var b strings.Builder
	for _, s := range w.path {
		if s.key == nil {
			fmt.Fprintf(&b, "[%d]", s.index)
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.Write(s.key)
	}
	if b.Len() > 0 {
		b.WriteByte('.')
	}
	b.Write(key)
	return b.String()
}

var unmarshalerType = reflect.TypeFor[json.Unmarshaler]()

var fieldCache sync.Map // reflect.Type → map[string]reflect.Type

// jsonFields returns the JSON names of a struct's fields (those of
// embedded structs included) and their types.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	if v, ok := fieldCache.Load(t); ok {
		return v.(map[string]reflect.Type)
	}
	out := map[string]reflect.Type{}
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case name == "-" || !f.IsExported() && !f.Anonymous:
			continue
		case f.Anonymous && name == "":
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				maps.Copy(out, jsonFields(ft))
				continue
			}
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f.Type
	}
	fieldCache.Store(t, out)
	return out
}

func jsonError(err error) error {
	var (
		syn *json.SyntaxError
		typ *json.UnmarshalTypeError
		mbe *http.MaxBytesError
		dom *boxoffice.Error
	)
	var ne net.Error
	switch {
	case errors.As(err, &mbe):
		return err
	case errors.As(err, &ne) && ne.Timeout():
		return &boxoffice.Error{Code: codeTimeout, Message: "the request body did not arrive in time"}
	case errors.Is(err, io.EOF):
		return boxoffice.Errorf(boxoffice.EINVALID, "the request body is empty")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return boxoffice.Errorf(boxoffice.EINVALID, "the request body is truncated JSON")
	case errors.As(err, &syn):
		return boxoffice.Errorf(boxoffice.EINVALID, "malformed JSON at byte %d", syn.Offset)
	case errors.As(err, &typ):
		if typ.Field != "" {
			return boxoffice.Errorf(boxoffice.EINVALID, "field %s must be %s", typ.Field, jsonKind(typ.Type.Kind().String()))
		}
		return boxoffice.Errorf(boxoffice.EINVALID, "the body must be a JSON object")
	case errors.As(err, &dom):
		return dom
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		// encoding/json has no typed error for unknown fields.
		return boxoffice.Errorf(boxoffice.EINVALID, "unknown field %s", strings.TrimPrefix(err.Error(), "json: unknown field "))
	default:
		// A read that failed (the connection broke) or a decoder's error
		// without a type: no socket address or internals in the answer.
		return boxoffice.Errorf(boxoffice.EINVALID, "the request body could not be read as JSON")
	}
}

func jsonKind(k string) string {
	switch k {
	case "int", "int64", "int32", "uint", "uint64", "float64":
		return "a number"
	case "slice":
		return "an array"
	case "struct", "map":
		return "an object"
	case "bool":
		return "a boolean"
	default:
		return "a " + k
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
