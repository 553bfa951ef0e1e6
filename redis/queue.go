package redis

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/rueidis"

	"github.com/boxoffice/boxoffice"
)

// QueueState is boxoffice.QueueState on Redis. An event's queue lives in
// one hash slot, {q:<event>}:
//
//	<p>q:{q:<event>}:n                 hash: init, admitted, served, waiting, opened, released, drawbase
//	<p>q:{q:<event>}:e:<user>\x00<key>  hash: the entry (id, hash, req JSON, pos, status, outcome)
//	<p>q:{q:<event>}:live:<user>       the user's live entries
//	<p>q:{q:<event>}:waiting           list: entry keys of the pre-queue, in arrival order
//	<p>q:{q:<event>}:pool              the same, frozen at the opening until drawn
//	<p>q:{q:<event>}:opened            list: the same after the draw, in position order
//	<p>q:id:{<request>}                JSON ["<event>", "<user>", "<key>"], to find an entry by its id
//
// so admitting (idempotency, live count, position) is one script, atomic:
// the per-event counter is the Redis INCR of the design. One hot event's
// front door is one shard's work (~1e5 scripts/s); its seats spread over
// the cluster by section. Entries expire after TTL (the idempotency
// window).
type QueueState struct {
	client rueidis.Client
	prefix string
	// TTL of entries and counters; default 24h.
	TTL time.Duration
	// Timeout bounds each call; zero means DefaultTimeout.
	Timeout time.Duration
}

var _ boxoffice.QueueState = (*QueueState)(nil)

// NewQueueState returns a QueueState under prefix, which must not contain
// '{' or '}' (it panics if it does).
func NewQueueState(client rueidis.Client, prefix string) *QueueState {
	checkPrefix(prefix)
	return &QueueState{client: client, prefix: prefix, TTL: 24 * time.Hour}
}

func (q *QueueState) ctx(ctx context.Context) (context.Context, context.CancelFunc) {
	t := q.Timeout
	if t <= 0 {
		t = DefaultTimeout
	}
	return context.WithTimeout(ctx, t)
}

func (q *QueueState) slot(eventID boxoffice.ID) string {
	return q.prefix + "q:{q:" + eventID.String() + "}:"
}

func (q *QueueState) entryKey(eventID boxoffice.ID, user, key string) string {
	return q.slot(eventID) + "e:" + user + "\x00" + key
}

func (q *QueueState) idKey(id boxoffice.ID) string { return q.prefix + "q:id:{" + id.String() + "}" }

// admitLua admits a batch of one event's requests in order, each as if
// alone. KEYS counters, waiting, then entry and live per request; ARGV ttl
// s, then id, hash, maxLive, preQueue (0/1), request JSON per request.
// Reply: per request {'cold'|'replay'|'mismatch'|'busy'} or {'new',
// position, status}. 'cold': the event's state is not initialized on this
// node (see Init): a Redis that restarted empty must not hand out
// positions from 1 again. The counters are read once and written once.
const admitLua = `
local out = {}
local n = (#KEYS - 2) / 2
if redis.call('HGET', KEYS[1], 'init') ~= '1' then
  for i = 1, n do out[i] = {'cold'} end
  return out
end
local ttl = ARGV[1]
local c = redis.call('HMGET', KEYS[1], 'admitted', 'waiting', 'opened')
local admitted = tonumber(c[1] or '0')
local waiting = tonumber(c[2] or '0')
local opened = c[3] == '1'
local admitted0, waiting0, opened0 = admitted, waiting, opened
for i = 1, n do
  local ek, lk, a = KEYS[1 + 2 * i], KEYS[2 + 2 * i], 2 + 5 * (i - 1)
  local h = redis.call('HGET', ek, 'hash')
  if h then
    if h ~= ARGV[a + 1] then out[i] = {'mismatch'} else out[i] = {'replay'} end
  elseif tonumber(redis.call('GET', lk) or '0') >= tonumber(ARGV[a + 2]) then
    out[i] = {'busy'}
  else
    local status, pos = 'queued', 0
    if not opened and (ARGV[a + 3] == '1' or waiting > 0) then
      status = 'waiting'
      waiting = waiting + 1
      redis.call('RPUSH', KEYS[2], ek)
    else
      admitted = admitted + 1
      pos = admitted
      opened = true
    end
    redis.call('INCR', lk)
    redis.call('EXPIRE', lk, ttl)
    redis.call('HSET', ek, 'id', ARGV[a], 'hash', ARGV[a + 1], 'req', ARGV[a + 4], 'pos', pos, 'status', status)
    redis.call('EXPIRE', ek, ttl)
    out[i] = {'new', pos, status}
  end
end
if waiting ~= waiting0 then
  redis.call('HSET', KEYS[1], 'waiting', waiting)
  redis.call('EXPIRE', KEYS[2], ttl)
end
if admitted ~= admitted0 then
  -- The first admission past an empty pre-queue opens the event with
  -- nothing to release.
  if not opened0 then redis.call('HSET', KEYS[1], 'released', 1) end
  redis.call('HSET', KEYS[1], 'admitted', admitted, 'opened', 1)
end
redis.call('EXPIRE', KEYS[1], ttl)
return out
`

// finishLua: KEYS entry, counters, live; ARGV status, reason, message,
// booking, held_until ms, finished_at ms, request id. Reply 1 if recorded,
// 0 if the entry is not this request's (gone, or a later request under the
// same key) or not queued.
const finishLua = `
local cur = redis.call('HMGET', KEYS[1], 'id', 'status')
if cur[1] ~= ARGV[7] or cur[2] ~= 'queued' then return 0 end
redis.call('HSET', KEYS[1], 'status', ARGV[1], 'reason', ARGV[2], 'message', ARGV[3],
  'booking', ARGV[4], 'held_until', ARGV[5], 'finished_at', ARGV[6])
redis.call('HINCRBY', KEYS[2], 'served', 1)
if tonumber(redis.call('GET', KEYS[3]) or '0') > 0 then redis.call('DECR', KEYS[3]) end
return 1
`

// The draw opens the pre-queue in two steps, so that requests arriving
// meanwhile (the burst at the opening) never make it start over:
//
// closeLua: KEYS counters, waiting, pool; ARGV ttl s. It freezes the
// pre-queue: the waiting list becomes the pool to draw from, its positions
// (admitted+1 .. admitted+n) are reserved, and the event opens, so that
// later arrivals queue behind the pool at once. Reply 'cold' (see
// admitLua), 'drawing' (a pool waits to be drawn, now or since a crash) or
// 'done' (nothing left to draw).
const closeLua = `
if redis.call('HGET', KEYS[1], 'init') ~= '1' then return 'cold' end
if redis.call('HGET', KEYS[1], 'opened') == '1' then
  if redis.call('EXISTS', KEYS[3]) == 1 then return 'drawing' end
  return 'done'
end
local n = redis.call('LLEN', KEYS[2])
local admitted = tonumber(redis.call('HGET', KEYS[1], 'admitted') or '0')
local released = 1
if n > 0 then
  released = 0
  redis.call('RENAME', KEYS[2], KEYS[3])
  redis.call('EXPIRE', KEYS[3], ARGV[1])
end
redis.call('HSET', KEYS[1], 'drawbase', admitted, 'admitted', admitted + n, 'waiting', 0, 'opened', 1, 'released', released)
redis.call('EXPIRE', KEYS[1], ARGV[1])
if n > 0 then return 'drawing' end
return 'done'
`

// drawLua: KEYS counters, pool, opened; ARGV ttl s, then the pool's entry
// keys in drawn order. It gives them the reserved positions in that order
// (an entry with a position already, a state restored after Redis lost it,
// keeps it) and drops the pool. Reply 'ok', or 'done' when there was no
// pool left (drawn before).
const drawLua = `
if redis.call('EXISTS', KEYS[2]) == 0 then return 'done' end
local pos = tonumber(redis.call('HGET', KEYS[1], 'drawbase') or '0')
for i = 2, #ARGV do
  local k = ARGV[i]
  if redis.call('HGET', k, 'status') == 'waiting' then
    pos = pos + 1
    redis.call('HSET', k, 'pos', pos, 'status', 'queued')
    redis.call('RPUSH', KEYS[3], k)
  end
end
if pos > 0 then redis.call('EXPIRE', KEYS[3], ARGV[1]) end
redis.call('DEL', KEYS[2])
return 'ok'
`

var (
	admitScript  = newScript(admitLua)
	finishScript = newScript(finishLua)
	closeScript  = newScript(closeLua)
	drawScript   = newScript(drawLua)
)

func (q *QueueState) ttlSeconds() string {
	return strconv.FormatInt(int64(q.TTL/time.Second), 10)
}

// Admit records r; see boxoffice.QueueState.
func (q *QueueState) Admit(ctx context.Context, r *boxoffice.QueuedRequest, maxLive int, preQueue bool) (*boxoffice.QueueEntry, bool, error) {
	return boxoffice.AdmitOne(ctx, q, r, maxLive, preQueue)
}

// AdmitMany admits a batch: one script per event (its hash slot) and the
// requests' id index entries, all in one pipelined round trip. The index
// is written before the verdict is known: for a replay or a refusal it
// names an id nobody was given, which is harmless.
func (q *QueueState) AdmitMany(ctx context.Context, as []boxoffice.Admission) ([]boxoffice.Admitted, error) {
	ctx, cancel := q.ctx(ctx)
	defer cancel()
	type group struct {
		idx        []int
		keys, args []string
	}
	var groups []*group
	byEvent := map[boxoffice.ID]*group{}
	for i, a := range as {
		r := a.Request
		g := byEvent[r.EventID]
		if g == nil {
			slot := q.slot(r.EventID)
			g = &group{keys: []string{slot + "n", slot + "waiting"}, args: []string{q.ttlSeconds()}}
			byEvent[r.EventID] = g
			groups = append(groups, g)
		}
		body, err := json.Marshal(r)
		if err != nil {
			return nil, err
		}
		pre := "0"
		if a.PreQueue {
			pre = "1"
		}
		g.idx = append(g.idx, i)
		g.keys = append(g.keys, q.entryKey(r.EventID, r.UserID, r.IdempotencyKey), q.slot(r.EventID)+"live:"+r.UserID)
		g.args = append(g.args, r.ID.String(), r.RequestHash, strconv.Itoa(a.MaxLive), pre, string(body))
	}
	cmds := make(rueidis.Commands, 0, len(groups)+len(as))
	for _, g := range groups {
		cmds = append(cmds, q.client.B().Evalsha().Sha1(admitScript.sha).Numkeys(int64(len(g.keys))).Key(g.keys...).Arg(g.args...).Build())
	}
	for _, a := range as {
		cmds = append(cmds, q.indexCmd(a.Request))
	}
	res := q.client.DoMulti(ctx, cmds...)
	for _, r := range res[len(groups):] {
		if err := r.Error(); err != nil {
			return nil, boxoffice.Unavailable("the queue state", err)
		}
	}
	out := make([]boxoffice.Admitted, len(as))
	for k, g := range groups {
		resp := res[k]
		if e, ok := rueidis.IsRedisErr(resp.Error()); ok && e.IsNoScript() {
			resp = admitScript.exec(ctx, q.client, g.keys, g.args)
		}
		verdicts, err := resp.ToArray()
		if err == nil && len(verdicts) != len(g.idx) {
			err = fmt.Errorf("%d verdicts for %d requests", len(verdicts), len(g.idx))
		}
		if err != nil {
			return nil, boxoffice.Unavailable("the queue state", err)
		}
		for j, i := range g.idx {
			if out[i], err = q.admitted(ctx, as[i].Request, g.keys[2+2*j], verdicts[j]); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// admitted reads one request's verdict from the admission script.
func (q *QueueState) admitted(ctx context.Context, r *boxoffice.QueuedRequest, entry string, v rueidis.RedisMessage) (boxoffice.Admitted, error) {
	res, err := v.ToArray()
	if err == nil && len(res) == 0 {
		err = errors.New("empty verdict from the admission script")
	}
	if err != nil {
		return boxoffice.Admitted{}, boxoffice.Unavailable("the queue state", err)
	}
	verdict, _ := res[0].ToString()
	switch verdict {
	case "cold":
		return boxoffice.Admitted{Err: boxoffice.QueueColdError()}, nil
	case "mismatch":
		return boxoffice.Admitted{Err: boxoffice.Errorf(boxoffice.EIDEMMISMATCH, "this idempotency key was already used for a different request")}, nil
	case "busy":
		return boxoffice.Admitted{Err: boxoffice.Errorf(boxoffice.ECONFLICT, "you already have a request in this event's queue")}, nil
	case "replay":
		e, err := q.entry(ctx, entry)
		if err == nil {
			// The index may be missing if the first attempt died before it.
			err = q.index(ctx, e.Request)
		}
		if err != nil {
			return boxoffice.Admitted{Err: err}, nil
		}
		return boxoffice.Admitted{Entry: e, Replay: true}, nil
	}
	if len(res) < 3 {
		return boxoffice.Admitted{}, boxoffice.Unavailable("the queue state", fmt.Errorf("admission verdict %q", verdict))
	}
	pos, _ := res[1].AsInt64()
	status, _ := res[2].ToString()
	row := *r
	row.Position = pos
	return boxoffice.Admitted{Entry: &boxoffice.QueueEntry{Request: &row, Status: boxoffice.QueueStatus(status)}}, nil
}

func (q *QueueState) indexCmd(r *boxoffice.QueuedRequest) rueidis.Completed {
	v, _ := json.Marshal([]string{r.EventID.String(), r.UserID, r.IdempotencyKey})
	return q.client.B().Set().Key(q.idKey(r.ID)).Value(string(v)).Ex(q.TTL).Build()
}

func (q *QueueState) index(ctx context.Context, r *boxoffice.QueuedRequest) error {
	err := q.client.Do(ctx, q.indexCmd(r)).Error()
	if err != nil {
		return boxoffice.Unavailable("the queue state", err)
	}
	return nil
}

// lookup finds the entry key of a request id.
func (q *QueueState) lookup(ctx context.Context, id boxoffice.ID) (string, error) {
	v, err := q.client.Do(ctx, q.client.B().Get().Key(q.idKey(id)).Build()).ToString()
	if rueidis.IsRedisNil(err) {
		return "", boxoffice.Errorf(boxoffice.ENOTFOUND, "no queued request %d", id)
	}
	if err != nil {
		return "", boxoffice.Unavailable("the queue state", err)
	}
	var parts []string
	if json.Unmarshal([]byte(v), &parts) != nil || len(parts) != 3 {
		return "", boxoffice.Errorf(boxoffice.ENOTFOUND, "no queued request %d", id)
	}
	ev, err := boxoffice.ParseID(parts[0])
	if err != nil {
		return "", boxoffice.Errorf(boxoffice.ENOTFOUND, "no queued request %d", id)
	}
	return q.entryKey(ev, parts[1], parts[2]), nil
}

func (q *QueueState) entry(ctx context.Context, key string) (*boxoffice.QueueEntry, error) {
	m, err := q.client.Do(ctx, q.client.B().Hgetall().Key(key).Build()).AsStrMap()
	if err != nil {
		return nil, boxoffice.Unavailable("the queue state", err)
	}
	if len(m) == 0 {
		return nil, boxoffice.Errorf(boxoffice.ENOTFOUND, "no such queued request")
	}
	return decodeEntry(m)
}

func decodeEntry(m map[string]string) (*boxoffice.QueueEntry, error) {
	var r boxoffice.QueuedRequest
	if err := json.Unmarshal([]byte(m["req"]), &r); err != nil {
		return nil, &boxoffice.Error{Code: boxoffice.EINTERNAL, Message: "queue entry is unreadable", Err: err}
	}
	return decodeState(m, &r), nil
}

// decodeState reads an entry's state fields around its request r.
func decodeState(m map[string]string, r *boxoffice.QueuedRequest) *boxoffice.QueueEntry {
	r.Position, _ = strconv.ParseInt(m["pos"], 10, 64)
	e := &boxoffice.QueueEntry{Request: r, Status: boxoffice.QueueStatus(m["status"]), Reason: m["reason"], Message: m["message"]}
	if b, err := strconv.ParseInt(m["booking"], 10, 64); err == nil {
		e.BookingID = boxoffice.ID(b)
	}
	if ms, err := strconv.ParseInt(m["held_until"], 10, 64); err == nil && ms > 0 {
		e.HeldUntil = time.UnixMilli(ms).UTC()
	}
	if ms, err := strconv.ParseInt(m["finished_at"], 10, 64); err == nil && ms > 0 {
		e.FinishedAt = time.UnixMilli(ms).UTC()
	}
	return e
}

// EntryByKey reads an entry by its key: one round trip.
func (q *QueueState) EntryByKey(ctx context.Context, eventID boxoffice.ID, userID, key string) (*boxoffice.QueueEntry, error) {
	ctx, cancel := q.ctx(ctx)
	defer cancel()
	return q.entry(ctx, q.entryKey(eventID, userID, key))
}

// Entries reads the entries of a batch by their keys (event, user, key, as
// the log delivered each request), all in one pipelined round trip. An
// entry under a request's key that is another request's is not its. Only
// the entry's state is read: its request is the one delivered (same id,
// same content), so the stored copy is not decoded again.
func (q *QueueState) Entries(ctx context.Context, rs []*boxoffice.QueuedRequest) ([]*boxoffice.QueueEntry, error) {
	out := make([]*boxoffice.QueueEntry, len(rs))
	if len(rs) == 0 {
		return out, nil
	}
	ctx, cancel := q.ctx(ctx)
	defer cancel()
	cmds := make(rueidis.Commands, len(rs))
	for i, r := range rs {
		cmds[i] = q.client.B().Hmget().Key(q.entryKey(r.EventID, r.UserID, r.IdempotencyKey)).
			Field(stateFields...).Build()
	}
	for i, res := range q.client.DoMulti(ctx, cmds...) {
		vs, err := res.ToArray()
		if err != nil {
			return nil, boxoffice.Unavailable("the queue state", err)
		}
		m := make(map[string]string, len(stateFields))
		for j, v := range vs {
			if s, err := v.ToString(); err == nil {
				m[stateFields[j]] = s
			}
		}
		if m["id"] != rs[i].ID.String() {
			continue // none, or another request's
		}
		r := *rs[i]
		out[i] = decodeState(m, &r)
	}
	return out, nil
}

// stateFields are an entry's fields besides its request.
var stateFields = []string{"id", "pos", "status", "reason", "message", "booking", "held_until", "finished_at"}

// Entry returns a request's entry, or ENOTFOUND.
func (q *QueueState) Entry(ctx context.Context, id boxoffice.ID) (*boxoffice.QueueEntry, error) {
	ctx, cancel := q.ctx(ctx)
	defer cancel()
	key, err := q.lookup(ctx, id)
	if err != nil {
		return nil, err
	}
	return q.entry(ctx, key)
}

// Finish records a queued request's outcome once.
// The entry's key comes from the request itself (event, user, key, as the
// log delivered it), so Finish is one script call, not a look-up by id
// first; the script checks that the entry there is this request's.
func (q *QueueState) Finish(ctx context.Context, r *boxoffice.QueuedRequest, o boxoffice.QueueOutcome) (bool, error) {
	return boxoffice.FinishOne(ctx, q, r, o)
}

// FinishMany is Finish for a batch: one finish script per request, all in
// one pipelined round trip (on a cluster, one per node, in parallel).
func (q *QueueState) FinishMany(ctx context.Context, rs []*boxoffice.QueuedRequest, os []boxoffice.QueueOutcome) ([]bool, error) {
	if err := boxoffice.CheckOutcomes(rs, os); err != nil {
		return nil, err
	}
	execs := make([]rueidis.LuaExec, len(rs))
	for i, r := range rs {
		o := os[i]
		var held int64
		if !o.HeldUntil.IsZero() {
			held = o.HeldUntil.UnixMilli()
		}
		slot := q.slot(r.EventID)
		execs[i] = rueidis.LuaExec{
			Keys: []string{q.entryKey(r.EventID, r.UserID, r.IdempotencyKey), slot + "n", slot + "live:" + r.UserID},
			Args: []string{string(o.Status), o.Reason, o.Message, o.BookingID.String(), strconv.FormatInt(held, 10),
				strconv.FormatInt(o.FinishedAt.UnixMilli(), 10), r.ID.String()},
		}
	}
	first := make([]bool, len(rs))
	if len(rs) == 0 {
		return first, nil
	}
	ctx, cancel := q.ctx(ctx)
	defer cancel()
	for i, res := range finishScript.execMulti(ctx, q.client, execs) {
		n, err := res.AsInt64()
		if err != nil {
			return nil, boxoffice.Unavailable("the queue state", err)
		}
		first[i] = n == 1
	}
	return first, nil
}

// Open draws the pre-queue's positions; see boxoffice.QueueState.
func (q *QueueState) Open(ctx context.Context, eventID boxoffice.ID, draw func(ids []boxoffice.ID) []boxoffice.ID) ([]*boxoffice.QueuedRequest, error) {
	// Not one call's timeout: a big pre-queue is read and drawn in several
	// round trips, by the opener, not for a waiting client.
	ctx, cancel := context.WithTimeout(ctx, openTimeout)
	defer cancel()
	slot := q.slot(eventID)
	verdict, err := closeScript.exec(ctx, q.client, []string{slot + "n", slot + "waiting", slot + "pool"}, []string{q.ttlSeconds()}).ToString()
	if err != nil {
		return nil, boxoffice.Unavailable("the queue state", err)
	}
	switch verdict {
	case "cold":
		return nil, boxoffice.QueueColdError()
	case "drawing":
		// The pool is frozen: whoever draws it, now or after a crash,
		// draws the same entries.
		keys, err := q.client.Do(ctx, q.client.B().Lrange().Key(slot+"pool").Start(0).Stop(-1).Build()).AsStrSlice()
		if err != nil {
			return nil, boxoffice.Unavailable("the queue state", err)
		}
		drawn, err := q.drawKeys(ctx, keys, draw)
		if err != nil {
			return nil, err
		}
		args := append([]string{q.ttlSeconds()}, drawn...)
		if err := drawScript.exec(ctx, q.client, []string{slot + "n", slot + "pool", slot + "opened"}, args).Error(); err != nil {
			return nil, boxoffice.Unavailable("the queue state", err)
		}
	}
	keys, err := q.client.Do(ctx, q.client.B().Lrange().Key(slot+"opened").Start(0).Stop(-1).Build()).AsStrSlice()
	if err != nil {
		return nil, boxoffice.Unavailable("the queue state", err)
	}
	out := make([]*boxoffice.QueuedRequest, 0, len(keys))
	for i := 0; i < len(keys); i += 1000 {
		chunk := keys[i:min(i+1000, len(keys))]
		cmds := make(rueidis.Commands, len(chunk))
		for j, k := range chunk {
			cmds[j] = q.client.B().Hgetall().Key(k).Build()
		}
		for _, res := range q.client.DoMulti(ctx, cmds...) {
			m, err := res.AsStrMap()
			if err != nil {
				return nil, boxoffice.Unavailable("the queue state", err)
			}
			if len(m) == 0 {
				continue // expired since the draw
			}
			e, err := decodeEntry(m)
			if err != nil {
				return nil, err
			}
			out = append(out, e.Request)
		}
	}
	return out, nil
}

// openTimeout bounds Open: reading a pre-queue of a million entries, the
// draw and the scripts.
const openTimeout = time.Minute

// drawKeys reads the ids of the pool's entries still waiting (the others
// keep their positions: a state restored after Redis lost it) and returns
// their keys in the order draw gives their ids.
func (q *QueueState) drawKeys(ctx context.Context, keys []string, draw func(ids []boxoffice.ID) []boxoffice.ID) ([]string, error) {
	byID := make(map[boxoffice.ID]string, len(keys))
	ids := make([]boxoffice.ID, 0, len(keys))
	for i := 0; i < len(keys); i += 1000 {
		chunk := keys[i:min(i+1000, len(keys))]
		cmds := make(rueidis.Commands, len(chunk))
		for j, k := range chunk {
			cmds[j] = q.client.B().Hmget().Key(k).Field("id", "status").Build()
		}
		for j, res := range q.client.DoMulti(ctx, cmds...) {
			f, err := res.ToArray()
			if err != nil || len(f) != 2 {
				return nil, boxoffice.Unavailable("the queue state", fmt.Errorf("entry %q: %v", chunk[j], err))
			}
			status, _ := f[1].ToString()
			idText, _ := f[0].ToString()
			id, err := boxoffice.ParseID(idText)
			if status != string(boxoffice.QueueWaiting) || err != nil {
				continue // gone, or given a position before
			}
			byID[id] = chunk[j]
			ids = append(ids, id)
		}
	}
	order, err := boxoffice.ApplyDraw(draw, ids)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(order))
	for i, id := range order {
		out[i] = byID[id]
	}
	return out, nil
}

// Progress returns the event's queue counters.
func (q *QueueState) Progress(ctx context.Context, eventID boxoffice.ID) (boxoffice.QueueProgress, error) {
	ctx, cancel := q.ctx(ctx)
	defer cancel()
	m, err := q.client.Do(ctx, q.client.B().Hgetall().Key(q.slot(eventID)+"n").Build()).AsStrMap()
	if err != nil {
		return boxoffice.QueueProgress{}, boxoffice.Unavailable("the queue state", err)
	}
	var p boxoffice.QueueProgress
	p.Admitted, _ = strconv.ParseInt(m["admitted"], 10, 64)
	p.Served, _ = strconv.ParseInt(m["served"], 10, 64)
	p.Waiting, _ = strconv.ParseInt(m["waiting"], 10, 64)
	p.Opened = m["opened"] == "1"
	p.Released = m["released"] == "1"
	p.SoldOutUpTo, _ = strconv.ParseInt(m["soldout"], 10, 64)
	if m["init"] != "1" {
		return p, boxoffice.QueueColdError()
	}
	return p, nil
}

// MarkSoldOut raises the event's sold-out mark to its highest position
// given, in one script on the event's counters.
func (q *QueueState) MarkSoldOut(ctx context.Context, eventID boxoffice.ID) (int64, error) {
	ctx, cancel := q.ctx(ctx)
	defer cancel()
	res := soldOutScript.exec(ctx, q.client, []string{q.slot(eventID) + "n"}, nil)
	if s, err := res.ToString(); err == nil && s == "cold" {
		return 0, boxoffice.QueueColdError()
	}
	upTo, err := res.AsInt64()
	if err != nil {
		return 0, boxoffice.Unavailable("the queue state", err)
	}
	return upTo, nil
}

// soldOutLua: KEYS the event's counters. Reply 'cold' (see admitLua) or
// the sold-out mark, raised to the highest position given.
const soldOutLua = `
if redis.call('HGET', KEYS[1], 'init') ~= '1' then return 'cold' end
local admitted = tonumber(redis.call('HGET', KEYS[1], 'admitted') or '0')
local mark = tonumber(redis.call('HGET', KEYS[1], 'soldout') or '0')
if admitted > mark then
  mark = admitted
  redis.call('HSET', KEYS[1], 'soldout', mark)
end
return mark
`

var soldOutScript = newScript(soldOutLua)

// MarkReleased records that the drawn pre-queue is in the log.
func (q *QueueState) MarkReleased(ctx context.Context, eventID boxoffice.ID) error {
	ctx, cancel := q.ctx(ctx)
	defer cancel()
	if err := q.client.Do(ctx, q.client.B().Hset().Key(q.slot(eventID)+"n").FieldValue().FieldValue("released", "1").Build()).Error(); err != nil {
		return boxoffice.Unavailable("the queue state", err)
	}
	return nil
}
