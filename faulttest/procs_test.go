package faulttest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/boxoffice/boxoffice/internal/pgcluster"
)

// proc is one process of the topology: started, killed, stopped and
// continued as a whole process group, and started again with the same
// arguments (the same port, for an API) after a kill.
type proc struct {
	name    string
	bin     string
	args    []string
	env     []string
	logPath string
	// ready, when set, is a line of stdout the process prints once it is
	// running; its first group (if any) is kept in match.
	ready *regexp.Regexp
	// check, when set, is polled after the start until it answers nil.
	check func(ctx context.Context) error

	mu          sync.Mutex
	cmd         *exec.Cmd
	done        chan struct{}
	incarnation int
	stopped     bool // SIGSTOPped
	match       string
	starts      []time.Time
	exits       []time.Time
}

// start runs the process and waits (up to timeout) until it is ready.
func (p *proc) start(timeout time.Duration) error {
	p.mu.Lock()
	locked := true
	defer func() {
		if locked {
			p.mu.Unlock()
		}
	}()
	if p.done != nil {
		select {
		case <-p.done:
		default:
			return fmt.Errorf("%s: already running", p.name)
		}
	}
	p.incarnation++
	f, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	fmt.Fprintf(f, "=== faulttest: %s start #%d at %s: %s %s\n", p.name, p.incarnation,
		time.Now().Format("15:04:05.000"), p.bin, strings.Join(p.args, " "))
	r, w, err := os.Pipe()
	if err != nil {
		f.Close()
		return err
	}
	cmd := exec.Command(p.bin, p.args...)
	cmd.Env = append(os.Environ(), p.env...)
	cmd.Stdout = w
	cmd.Stderr = f
	// Its own process group, so that a kill reaches every child; and killed
	// with the test process if that dies without its clean-ups (a timeout).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		r.Close()
		w.Close()
		f.Close()
		return fmt.Errorf("%s: %w", p.name, err)
	}
	w.Close()
	p.cmd, p.stopped = cmd, false
	p.starts = append(p.starts, time.Now())
	done := make(chan struct{})
	p.done = done
	found := make(chan string, 1)
	ready := p.ready
	incarnation := p.incarnation
	p.mu.Unlock()
	locked = false
	go func() {
		defer r.Close()
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(f, line)
			if ready != nil {
				if m := ready.FindStringSubmatch(line); m != nil {
					select {
					case found <- m[len(m)-1]:
					default:
					}
				}
			}
		}
	}()
	go func() {
		err := cmd.Wait()
		p.mu.Lock()
		p.exits = append(p.exits, time.Now())
		p.mu.Unlock()
		fmt.Fprintf(f, "=== faulttest: %s #%d exited at %s: %v\n", p.name, incarnation, time.Now().Format("15:04:05.000"), err)
		f.Close()
		close(done)
	}()

	deadline := time.Now().Add(timeout)
	if ready != nil {
		select {
		case v := <-found:
			p.mu.Lock()
			p.match = v
			p.mu.Unlock()
		case <-done:
			return fmt.Errorf("%s exited at start (log %s)", p.name, p.logPath)
		case <-time.After(time.Until(deadline)):
			return fmt.Errorf("%s printed no %q within %s (log %s)", p.name, ready, timeout, p.logPath)
		}
	}
	if p.check != nil {
		for {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			err := p.check(ctx)
			cancel()
			if err == nil {
				break
			}
			select {
			case <-done:
				return fmt.Errorf("%s exited at start (log %s)", p.name, p.logPath)
			default:
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("%s not ready within %s: %v (log %s)", p.name, timeout, err, p.logPath)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	return nil
}

// running reports whether the process is alive (stopped or not).
func (p *proc) running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done == nil {
		return false
	}
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// signal sends sig to the process group; SIGKILL also waits for the exit.
func (p *proc) signal(sig syscall.Signal) error {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	if cmd == nil || cmd.Process == nil {
		p.mu.Unlock()
		return fmt.Errorf("%s: not started", p.name)
	}
	switch sig {
	case syscall.SIGSTOP:
		p.stopped = true
	case syscall.SIGCONT, syscall.SIGKILL:
		p.stopped = false
	}
	p.mu.Unlock()
	if err := syscall.Kill(-cmd.Process.Pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("%s: %v: %w", p.name, sig, err)
	}
	if sig == syscall.SIGKILL {
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			return fmt.Errorf("%s: still alive 10 s after SIGKILL", p.name)
		}
	}
	return nil
}

func (p *proc) isStopped() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stopped
}

// kill ends the process group at once (clean-up path: never fails).
func (p *proc) kill() {
	if p.running() {
		_ = p.signal(syscall.SIGKILL)
	}
}

// freePort and run are pgcluster's, which needs them too.
var (
	freePort = pgcluster.FreePort
	run      = pgcluster.Run
)

// httpOK is a readiness check: GET url answers 200.
func httpOK(url string) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET %s: %d", url, resp.StatusCode)
		}
		return nil
	}
}

// redisPing is a readiness check: the server at addr answers PING.
func redisPing(addr string) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		var d net.Dialer
		c, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return err
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(time.Second))
		if _, err := c.Write([]byte("PING\r\n")); err != nil {
			return err
		}
		line, err := bufio.NewReader(c).ReadString('\n')
		if err != nil {
			return err
		}
		if !strings.HasPrefix(line, "+PONG") {
			return fmt.Errorf("redis answered %q", strings.TrimSpace(line))
		}
		return nil
	}
}
