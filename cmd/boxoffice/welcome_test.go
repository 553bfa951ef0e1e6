package main

import (
	"bytes"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/auth"
)

// A server on a shared store or a public address prints no token: its
// output ends up in logs, where a token is a credential (issue 16).
func TestWelcomePrintsTokensOnlyForTheLocalDefault(t *testing.T) {
	a, err := auth.New([]byte(strings.Repeat("s", 40)), nil)
	if err != nil {
		t.Fatal(err)
	}
	ev := &boxoffice.Event{ID: 42, Name: "Demo", SaleOpensAt: time.Now()}
	var local, shared bytes.Buffer
	printWelcome(&local, "http://127.0.0.1:8080", a, ev, ev, true)
	printWelcome(&shared, "http://10.0.0.1:8080", a, ev, ev, false)
	if !strings.Contains(local.String(), "admin token") || !strings.Contains(local.String(), "#token=eyJ") {
		t.Errorf("the local default prints no sign-in tokens:\n%s", local.String())
	}
	if out := shared.String(); strings.Contains(out, "eyJ") || strings.Contains(out, "#token=") || !strings.Contains(out, "demo event 42") {
		t.Errorf("a shared server printed a token, or no demo event:\n%s", out)
	}
	for addr, want := range map[string]bool{"127.0.0.1:0": true, "[::1]:0": true, "0.0.0.0:0": false} {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			continue // no IPv6 here
		}
		if got := isLoopback(ln.Addr()); got != want {
			t.Errorf("isLoopback(%s) = %v", ln.Addr(), got)
		}
		ln.Close()
	}
}
