package httpapi

import (
	"encoding/json"
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

// The name check walks the body once: every object's keys, at any depth,
// through arrays, maps and escapes, and names the path of the first
// unknown key.
func TestExactNames(t *testing.T) {
	for body, want := range map[string]string{
		`{"event_id":"1","best":{"quantity":2}}`:                              "",
		`{"Event_ID":"1"}`:                                                    "Event_ID",
		`{"event_id":"1","best":{"Quantity":2}}`:                              "best.Quantity",
		`{"event_id":"1","list":[{"quantity":1},{"QUANTITY":1}]}`:             "list[1].QUANTITY",
		`{"grid":[[{"quantity":1}],[{"quantity":1},{"Quantity":1}]]}`:         "grid[1][1].Quantity",
		`{"\u0065vent_id":"1"}`:                                               "",
		`{"\u0045vent_id":"1"}`:                                               "Event_id",
		`{"event_id":"a\"}{\"X\":1,[","list":[]}`:                             "",
		" { \"event_id\" : \"1\" ,\n \"list\" : [ { \"quantity\" : 1 } ] }\t": "",
		`{"best":null,"list":null,"grid":[null,[]]}`:                          "",
		`{"tags":{"AnyKey":{"quantity":1}}}`:                                  "",
		`{"tags":{"k":{"Quantity":1}}}`:                                       "tags.k.Quantity",
		`{"n":-1.5e3,"b":true,"list":[],"event_id":"2"}`:                      "",
		`{"raw":{"Anything":[{"X":1}]}}`:                                      "",
		`{"event_id":"1","extra":{"a":[1,2,{"b":"}"}]}}`:                      "extra",
	} {
		err := decodeBytesOrReader(strings.NewReader(body), &reserveRequestForTest{})
		switch {
		case want == "" && err != nil:
			t.Errorf("%s: %v, want it accepted", body, err)
		case want != "" && !strings.Contains(boxoffice.ErrorMessage(err), `"`+want+`"`):
			t.Errorf("%s: %v, want unknown field %q", body, err, want)
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
	Grid [][]*struct {
		Quantity int `json:"quantity"`
	} `json:"grid"`
	Tags map[string]struct {
		Quantity int `json:"quantity"`
	} `json:"tags"`
	N   float64         `json:"n"`
	B   bool            `json:"b"`
	Raw json.RawMessage `json:"raw"`
}

// BenchmarkDecodeReserve is the decoding of a reserve's body, the rule
// every request with a body pays.
//
//	go test ./httpapi -run '^$' -bench DecodeReserve -benchmem
func BenchmarkDecodeReserve(b *testing.B) {
	body := `{"event_id":"266168001122795520","seat_ids":["Floor-A-1"],"idempotency_key":"k-123456"}`
	b.ReportAllocs()
	for b.Loop() {
		var r reserveRequest
		if err := decodeBytesOrReader(strings.NewReader(body), &r); err != nil {
			b.Fatal(err)
		}
	}
}
