package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"

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
	dec := json.NewDecoder(rd)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return jsonError(err)
	}
	if err := dec.Decode(&struct{}{}); !errors.Is(err, io.EOF) {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return err
		}
		return boxoffice.Errorf(boxoffice.EINVALID, "the body must hold exactly one JSON object")
	}
	return nil
}

func jsonError(err error) error {
	var (
		syn *json.SyntaxError
		typ *json.UnmarshalTypeError
		mbe *http.MaxBytesError
		dom *boxoffice.Error
	)
	switch {
	case errors.As(err, &mbe):
		return err
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
		return boxoffice.Errorf(boxoffice.EINVALID, "invalid JSON: %s", fmt.Sprint(err))
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
