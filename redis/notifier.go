package redis

import (
	"bytes"
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/internal/jsonscan"
)

// Notifier is boxoffice.Notifier on Redis pub/sub: one channel,
// <prefix>queue-notices, that every API process subscribes to once and fans
// out to its own streams. Pub/sub is fire-and-forget, which suits it: the
// queue state is the truth and the streams poll it too.
type Notifier struct {
	client  rueidis.Client
	channel string
}

var _ boxoffice.Notifier = (*Notifier)(nil)

// NewNotifier returns a Notifier under prefix.
func NewNotifier(client rueidis.Client, prefix string) *Notifier {
	checkPrefix(prefix)
	return &Notifier{client: client, channel: prefix + "queue-notices"}
}

// Notify publishes the notices: one as a JSON object, several (a drained
// batch) as one JSON array in one message, so a batch costs one PUBLISH
// and one delivery per listening process, not one per request.
func (n *Notifier) Notify(ctx context.Context, notices ...boxoffice.QueueNotice) error {
	var (
		b   []byte
		err error
	)
	switch len(notices) {
	case 0:
		return nil
	case 1:
		b, err = json.Marshal(notices[0])
	default:
		b, err = json.Marshal(notices)
	}
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, DefaultTimeout)
	defer cancel()
	if err := n.client.Do(ctx, n.client.B().Publish().Channel(n.channel).Message(string(b)).Build()).Error(); err != nil {
		return boxoffice.Unavailable("the notifier", err)
	}
	return nil
}

// Listen calls fn with every notice until ctx ends, subscribing again after
// a lost connection. Once it has returned, fn is not called again.
//
// It subscribes on a connection of its own (rueidis's Dedicated), which
// goes back to the pool unsubscribed when it returns. On a connection
// shared with other commands, as client.Receive alone would, a
// subscription outlives its Receive (rueidis does not unsubscribe), and a
// later Receive on that connection deadlocks it under traffic: the
// channel's messages fill the new subscriber's buffer before its
// SUBSCRIBE is confirmed, blocking the connection's reader, and so every
// command sent on it. On its own connection, a slow fn delays only the
// notices, never the holds or the queue.
func (n *Notifier) Listen(ctx context.Context, fn func(boxoffice.QueueNotice)) error {
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		start := time.Now()
		_ = n.client.Dedicated(func(c rueidis.DedicatedClient) error {
			return c.Receive(ctx, c.B().Subscribe().Channel(n.channel).Build(), func(m rueidis.PubSubMessage) {
				for _, notice := range decodeNotices(m.Message) {
					fn(notice)
				}
			})
		})
		if time.Since(start) > 10*time.Second {
			backoff = 100 * time.Millisecond
		}
		select {
		case <-ctx.Done():
		case <-time.After(backoff):
			backoff = min(2*backoff, 5*time.Second)
		}
	}
	return nil
}

// wireNotice is a QueueNotice as Notify publishes it, read back without
// boxoffice.ID's validation (positive ids only): Notify publishes any
// notice, so Listen must read any back, a zero or negative id included.
type wireNotice struct {
	RequestID int64                 `json:"request_id,string"`
	EventID   int64                 `json:"event_id,string"`
	UserID    string                `json:"user_id"`
	Status    boxoffice.QueueStatus `json:"status"`
}

// decodeNotices reads a message of Notify: one notice, or an array of
// them. An unreadable element is skipped alone, not with the rest of its
// batch. Every API process reads every notice of every drained batch, and
// encoding/json (the array scanned once, each element again, then
// reflection) made that 6 % of a worker's process CPU in the drain: the
// messages Notify writes are read in one pass (noticesFast), 5x faster,
// anything else the general way.
func decodeNotices(msg string) []boxoffice.QueueNotice {
	var out []boxoffice.QueueNotice
	if noticesFast(&out, []byte(msg)) {
		return out
	}
	return decodeNoticesGeneral(msg)
}

// noticesFast reads a message of plain notices (ids as quoted decimals,
// texts of printable ASCII without escapes) in one pass, as
// decodeNoticesGeneral would (TestNoticesFastAgreesWithTheGeneralWay); it
// leaves out untouched when it reports false.
func noticesFast(out *[]boxoffice.QueueNotice, b []byte) bool {
	// Notify writes no space before the message; the general way reads an
	// array only without one.
	if len(b) > 0 && b[0] == '{' {
		n, next, ok := noticeAt(b, 0)
		if !ok || jsonscan.Space(b, next) != len(b) {
			return false
		}
		*out = []boxoffice.QueueNotice{n}
		return true
	}
	if len(b) == 0 || b[0] != '[' {
		return false
	}
	ns := make([]boxoffice.QueueNotice, 0, bytes.Count(b, []byte(`"request_id"`)))
	i := jsonscan.Space(b, 1)
	if i < len(b) && b[i] == ']' {
		if jsonscan.Space(b, i+1) != len(b) {
			return false
		}
		*out = ns
		return true
	}
	for {
		n, next, ok := noticeAt(b, i)
		if !ok {
			return false
		}
		ns = append(ns, n)
		i = jsonscan.Space(b, next)
		switch {
		case i < len(b) && b[i] == ',':
			i = jsonscan.Space(b, i+1)
		case i < len(b) && b[i] == ']' && jsonscan.Space(b, i+1) == len(b):
			*out = ns
			return true
		default:
			return false
		}
	}
}

// noticeAt reads the plain notice object at b[i].
func noticeAt(b []byte, i int) (boxoffice.QueueNotice, int, bool) {
	var n boxoffice.QueueNotice
	// An id as wireNotice's ",string" reads it: a quoted JSON integer.
	id := func(at int) (boxoffice.ID, int, bool) {
		s, e, ok := jsonscan.String(b, at)
		if !ok || s == e {
			return 0, 0, false
		}
		d := s
		if b[d] == '-' {
			d++
		}
		if e == d || e-d > 19 || b[d] == '0' && e-d > 1 || bytes.IndexFunc(b[d:e], notDigit) >= 0 {
			return 0, 0, false
		}
		v, err := strconv.ParseInt(string(b[s:e]), 10, 64)
		return boxoffice.ID(v), e + 1, err == nil
	}
	next, ok := jsonscan.ObjectAt(b, i, func(key []byte, at int) (next int, ok bool) {
		switch string(key) {
		case "request_id":
			n.RequestID, next, ok = id(at)
		case "event_id":
			n.EventID, next, ok = id(at)
		case "user_id":
			next, ok = jsonscan.Text(b, at, &n.UserID)
		case "status":
			var st string
			next, ok = jsonscan.Text(b, at, &st)
			n.Status = boxoffice.QueueStatus(st)
		}
		return next, ok
	})
	return n, next, ok
}

func notDigit(r rune) bool { return r < '0' || r > '9' }

// decodeNoticesGeneral is decodeNotices by encoding/json.
func decodeNoticesGeneral(msg string) []boxoffice.QueueNotice {
	var raws []json.RawMessage
	if strings.HasPrefix(msg, "[") {
		if json.Unmarshal([]byte(msg), &raws) != nil {
			return nil
		}
	} else {
		raws = []json.RawMessage{json.RawMessage(msg)}
	}
	notices := make([]boxoffice.QueueNotice, 0, len(raws))
	for _, raw := range raws {
		var w wireNotice
		if json.Unmarshal(raw, &w) != nil {
			continue
		}
		notices = append(notices, boxoffice.QueueNotice{RequestID: boxoffice.ID(w.RequestID), EventID: boxoffice.ID(w.EventID), UserID: w.UserID, Status: w.Status})
	}
	return notices
}
