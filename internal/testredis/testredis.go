// Package testredis starts a redis-server of a test's own on a spare
// loopback port, without persistence, for tests that kill it, pause it or
// restart it empty (which the machine's shared Redis must never see).
package testredis

import (
	"net"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// Server is one redis-server process; Start and Kill may be called again
// and again (the port stays the same, the data does not).
type Server struct {
	Port int
	cmd  *exec.Cmd
}

// Start runs a redis-server on a spare port, killed when t ends. Without
// redis-server installed the test is skipped, or fails when CI=true.
func Start(t *testing.T) *Server {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("redis-server not installed (CI=true, so this fails): %v", err)
		}
		t.Skipf("redis-server not installed: %v", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{Port: l.Addr().(*net.TCPAddr).Port}
	l.Close()
	s.Start(t)
	t.Cleanup(func() {
		if s.cmd != nil {
			_ = s.cmd.Process.Signal(syscall.SIGCONT)
			s.Kill(t)
		}
	})
	return s
}

// URL is the server's address for redis.Dial.
func (s *Server) URL() string { return "redis://127.0.0.1:" + strconv.Itoa(s.Port) }

// Start (re)starts the server on its port, empty, and waits until it
// answers PING.
func (s *Server) Start(t *testing.T) {
	t.Helper()
	s.cmd = exec.Command("redis-server", "--port", strconv.Itoa(s.Port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--daemonize", "no", "--loglevel", "warning")
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !s.pong() {
		if time.Now().After(deadline) {
			t.Fatalf("redis-server on port %d did not answer PING", s.Port)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (s *Server) pong() bool {
	c, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(s.Port)))
	if err != nil {
		return false
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return false
	}
	buf := make([]byte, 7)
	n, _ := c.Read(buf)
	return string(buf[:n]) == "+PONG\r\n"
}

// Kill ends the server with SIGKILL: everything it held is gone.
func (s *Server) Kill(t *testing.T) {
	t.Helper()
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
	s.cmd = nil
}

// Signal sends sig to the server (SIGSTOP and SIGCONT pause and resume it).
func (s *Server) Signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := s.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
}
