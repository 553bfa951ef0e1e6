package redis

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/rueidis"
)

// Client timeouts that Dial sets unless the URL says otherwise
// (?dial_timeout=, ?write_timeout=): short, so that a dead node is noticed
// in about a second rather than rueidis's default ten.
const (
	DefaultDialTimeout  = time.Second
	DefaultWriteTimeout = 2 * time.Second
)

// Dial connects to Redis or to a Redis Cluster. addr is one of
//
//	redis://[user:password@]host:port[/db]  one server (or one cluster node)
//	host:port                               the same, without the scheme
//	host1:port1,host2:port2,...             cluster seed nodes (redis:// optional on each)
//
// rueidis detects a cluster by itself, so one address of a cluster node is
// enough; the list only makes the first connection survive a dead seed. A
// list must not select a database other than 0. Dial fails if no node
// answers; once connected, the client reconnects by itself.
func Dial(addr string) (rueidis.Client, error) {
	opt, err := parseAddr(addr)
	if err != nil {
		return nil, err
	}
	return rueidis.NewClient(opt)
}

func parseAddr(addr string) (rueidis.ClientOption, error) {
	var opt rueidis.ClientOption
	var parts []string
	for p := range strings.SplitSeq(addr, ",") {
		if p = strings.TrimSpace(p); p != "" {
			parts = append(parts, p)
		}
	}
	if len(parts) == 0 {
		return opt, errors.New("redis: empty address")
	}
	for i, p := range parts {
		if !strings.Contains(p, "://") {
			p = "redis://" + p
		}
		o, err := rueidis.ParseURL(p)
		if err != nil {
			return opt, fmt.Errorf("redis: address %q: %w", parts[i], err)
		}
		if i == 0 {
			opt = o
			continue
		}
		if o.SelectDB != 0 {
			return opt, fmt.Errorf("redis: address %q: a cluster node list cannot select a database", parts[i])
		}
		opt.InitAddress = append(opt.InitAddress, o.InitAddress...)
	}
	if len(opt.InitAddress) > 1 && opt.SelectDB != 0 {
		return opt, fmt.Errorf("redis: a cluster node list cannot select database %d", opt.SelectDB)
	}
	if opt.Dialer.Timeout == 0 {
		opt.Dialer.Timeout = DefaultDialTimeout
	}
	if opt.ConnWriteTimeout == 0 {
		opt.ConnWriteTimeout = DefaultWriteTimeout
	}
	return opt, nil
}
