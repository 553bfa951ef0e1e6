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

// decodeBytesOrReader is the decoding rule itself, shared with the fuzz
// tests.
func decodeBytesOrReader(rd io.Reader, v any) error {
	body, err := io.ReadAll(rd) // bounded by the caller (MaxBytesReader)
	if err != nil {
		return jsonError(err)
	}
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
	return exactNames(body, reflect.TypeOf(v), "")
}

// exactNames checks that every key of every JSON object in raw is the
// exact name of a field of t (or of the type t holds at that place).
func exactNames(raw []byte, t reflect.Type, at string) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(unmarshalerType) {
		return nil // its own names
	}
	switch t.Kind() {
	case reflect.Struct:
		var m map[string]json.RawMessage
		if json.Unmarshal(raw, &m) != nil {
			return nil // not an object: decoding has had its say
		}
		fields := jsonFields(t)
		for k, v := range m {
			ft, ok := fields[k]
			if !ok {
				return boxoffice.Errorf(boxoffice.EINVALID, "unknown field %q (names are case-sensitive)", at+k)
			}
			if err := exactNames(v, ft, at+k+"."); err != nil {
				return err
			}
		}
	case reflect.Slice, reflect.Array:
		var items []json.RawMessage
		if json.Unmarshal(raw, &items) != nil {
			return nil
		}
		for i, item := range items {
			if err := exactNames(item, t.Elem(), fmt.Sprintf("%s[%d].", strings.TrimSuffix(at, "."), i)); err != nil {
				return err
			}
		}
	case reflect.Map:
		var m map[string]json.RawMessage
		if json.Unmarshal(raw, &m) != nil {
			return nil
		}
		for k, v := range m {
			if err := exactNames(v, t.Elem(), at+k+"."); err != nil {
				return err
			}
		}
	}
	return nil
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
