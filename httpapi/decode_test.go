package httpapi

import (
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/boxoffice/boxoffice"
)

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "read tcp 127.0.0.1:8080->127.0.0.1:51234: i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

type failingReader struct{ err error }

func (f failingReader) Read([]byte) (int, error) { return 0, f.err }

// A body that stops arriving is a 408; a broken one a plain 400; neither
// tells a socket address. Field names are exact, at every depth.
func TestDecodeErrors(t *testing.T) {
	var v reserveRequestForTest
	err := decodeBytesOrReader(failingReader{timeoutErr{}}, &v)
	if boxoffice.ErrorCode(err) != codeTimeout || problems[codeTimeout].status != 408 {
		t.Errorf("a read timeout: %v (%s), want request_timeout, 408", err, boxoffice.ErrorCode(err))
	}
	err = decodeBytesOrReader(io.MultiReader(strings.NewReader(`{"a":`), failingReader{errors.New("read tcp 10.0.0.1:80->10.0.0.2:5: connection reset by peer")}), &v)
	if boxoffice.ErrorCode(err) != boxoffice.EINVALID || strings.Contains(boxoffice.ErrorMessage(err), "tcp") {
		t.Errorf("a broken read: %v", err)
	}
	for body, ok := range map[string]bool{
		`{"event_id":"1","best":{"quantity":2}}`:                  true,
		`{"Event_ID":"1"}`:                                        false,
		`{"event_id":"1","best":{"Quantity":2}}`:                  false,
		`{"event_id":"1","list":[{"quantity":1},{"QUANTITY":1}]}`: false,
		`{"event_id":"1","list":[{"quantity":1}]}`:                true,
	} {
		err := decodeBytesOrReader(strings.NewReader(body), &reserveRequestForTest{})
		if (err == nil) != ok {
			t.Errorf("%s: %v, want ok=%v", body, err, ok)
		}
	}
}

type reserveRequestForTest struct {
	EventID string `json:"event_id"`
	Best    *struct {
		Quantity int `json:"quantity"`
	} `json:"best"`
	List []struct {
		Quantity int `json:"quantity"`
	} `json:"list"`
}
