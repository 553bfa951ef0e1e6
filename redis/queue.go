package redis

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"time"

	"github.com/redis/rueidis"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/internal/jsonappend"
	"github.com/boxoffice/boxoffice/internal/lru"
)

// QueueState is boxoffice.QueueState on Redis. An event's queue lives in
// one hash slot, {q:<event>}:
//
//	<p>q:{q:<event>}:n                 hash: init, slots, admitted, given, served, waiting, opened, released, drawbase, drawend, drawn, soldout
//	<p>q:{q:<event>}:e:<user>\x00<key>  hash: the entry (id, hash, req JSON, pos, status, outcome)
//	<p>q:{q:<event>}:live:<user>       the user's live entries
//	<p>q:{q:<event>}:waiting           list: entry keys of the pre-queue, in arrival order
//	<p>q:{q:<event>}:pool              the same, frozen at the opening until drawn
//	<p>q:{q:<event>}:opened            list: the same after the draw, in position order
//	<p>q:id:{<request>}                JSON ["<event>", "<user>", "<key>"], to find an entry by its id
//
// so admitting (idempotency, live count, position) is one script, atomic:
// the per-event counter is the Redis INCR of the design. One slot is one
// primary's work (~1e5 admissions/s); for an event hotter than that, Slots
// spreads its queue over k slots, {q:<event>} and {q:<event>:<j>} for j in
// 1..k-1, each holding the requests of the users that hash to it (FNV-1a
// of the user id mod k), so a user's idempotency keys and live count stay
// in one script. Slot j gives positions j+1, j+1+k, j+1+2k, ...: unique
// without any cross-slot step, and close to arrival order as long as the
// slots fill evenly (users hash evenly; a position is off by at most k
// times the slots' difference in admissions). Each slot keeps its own
// sold-out mark (QueueProgress.Slots). The pre-queue is drawn as one: each
// slot freezes its share and reserves as many of its positions, and the
// draw hands the union of those positions out in drawn order (see Open).
// Entries expire after TTL (the idempotency window).
type QueueState struct {
	client rueidis.Client
	prefix string
	// TTL of entries and counters; default 24h.
	TTL time.Duration
	// Timeout bounds each call; zero means DefaultTimeout.
	Timeout time.Duration
	// Slots is how many hash slots the queue of an event initialized from
	// now on is spread over (0 or 1: one). An event keeps the number it was
	// initialized with (recorded in its counters), so changing Slots does
	// not move a live queue; a Redis that lost an event's counters sets it
	// up again with the number configured then.
	Slots int

	// The slots of the events initialized, and their key prefixes, for
	// the maxKnown events used last.
	known *lru.Cache[boxoffice.ID, int]
	tags  *lru.Cache[tagsOf, []string]
	// ids remembers the (event, user, key) of the request ids this process
	// admitted or looked up, which never change, so that a poll of a
	// request it knows reads its entry in one round trip, not two; and,
	// once known, the request itself, which never changes either, so
	// that the poll reads only the entry's state, not the request's
	// JSON, and decodes none.
	ids *lru.Cache[boxoffice.ID, idRef]
}

// idRef is what the id index says of a request id: where its entry is;
// and the request, when this process has it.
type idRef struct {
	event     boxoffice.ID
	user, key string
	req       *boxoffice.QueuedRequest // read only; nil until known
}

// maxIDs bounds QueueState.ids (some 300 bytes each with the request).
const maxIDs = 1 << 17

var _ boxoffice.QueueState = (*QueueState)(nil)

// NewQueueState returns a QueueState under prefix, which must not contain
// '{' or '}' (it panics if it does).
func NewQueueState(client rueidis.Client, prefix string) *QueueState {
	checkPrefix(prefix)
	return &QueueState{client: client, prefix: prefix, TTL: 24 * time.Hour,
		known: lru.New[boxoffice.ID, int](maxKnown), tags: lru.New[tagsOf, []string](maxKnown),
		ids: lru.New[boxoffice.ID, idRef](maxIDs)}
}

func (q *QueueState) ctx(ctx context.Context) (context.Context, context.CancelFunc) {
	t := q.Timeout
	if t <= 0 {
		t = DefaultTimeout
	}
	return context.WithTimeout(ctx, t)
}

// base is the key prefix of an event's queue on one slot, and where an
// event on several records how many (the init and slots fields).
func (q *QueueState) base(eventID boxoffice.ID) string {
	return q.prefix + "q:{q:" + eventID.String() + "}:"
}

// slot is the key prefix of slot j of an event's k slots.
func (q *QueueState) slot(eventID boxoffice.ID, j, k int) string {
	if k <= 1 {
		return q.base(eventID)
	}
	key := tagsOf{eventID, k}
	if prefixes, ok := q.tags.Get(key); ok {
		return prefixes[j]
	}
	prefixes := make([]string, k)
	for i := range prefixes {
		prefixes[i] = q.prefix + "q:{" + slotTag(eventID, i, k) + "}:"
	}
	q.tags.Add(key, prefixes)
	return prefixes[j]
}

type tagsOf struct {
	event boxoffice.ID
	k     int
}

// slotTag is the hash tag of slot j of an event's k slots:
// q:<event>:<j>:<c>, with the first c that puts its hash slot in the
// middle half of the j-th of k equal ranges of the 16,384. A cluster whose
// primaries split the hash slots evenly (as redis-cli --cluster create
// does) so has one of the event's slots on each primary when k is their
// number, and k/n on each when k is a multiple: never two on one primary
// by the luck of the hash. (About 2 tries.)
func slotTag(eventID boxoffice.ID, j, k int) string {
	lo, hi := (4*j+1)*hashSlots/(4*k), (4*j+3)*hashSlots/(4*k)
	prefix := "q:" + eventID.String() + ":" + strconv.Itoa(j) + ":"
	for c := 0; ; c++ {
		tag := prefix + strconv.Itoa(c)
		if s := int(crc16(tag)) % hashSlots; s >= lo && s < hi {
			return tag
		}
	}
}

// hashSlots is the number of a Redis Cluster's hash slots.
const hashSlots = 16384

// crc16 is Redis Cluster's key hash (CRC-16/XMODEM); a key's hash slot is
// crc16(tag) mod 16384.
func crc16(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc ^= uint16(s[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}

// UserSlot is the slot, of k, that holds a user's requests.
func UserSlot(user string, k int) int {
	if k <= 1 {
		return 0
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(user))
	return int(h.Sum32() % uint32(k))
}

// userKeys are the keys of a user's request and live count, in its slot.
func (q *QueueState) userKeys(eventID boxoffice.ID, k int, user, key string) (entry, live string) {
	slot := q.slot(eventID, UserSlot(user, k), k)
	return slot + "e:" + user + "\x00" + key, slot + "live:" + user
}

func (q *QueueState) entryKey(eventID boxoffice.ID, k int, user, key string) string {
	e, _ := q.userKeys(eventID, k, user, key)
	return e
}

func (q *QueueState) idKey(id boxoffice.ID) string { return q.prefix + "q:id:{" + id.String() + "}" }

// position is slot j's l-th position of k slots (0 for l = 0).
func position(l int64, j, k int) int64 {
	if l <= 0 {
		return 0
	}
	return (l-1)*int64(k) + int64(j) + 1
}

func (q *QueueState) configured() int { return max(1, q.Slots) }

// slotsOf returns how many slots an event's queue has: as recorded at its
// initialization (1 for an event initialized before slots were recorded),
// or, for an event not initialized (new, or lost by its Redis), the number
// configured now, which its Init will record. Initialized events are
// remembered (the maxKnown used last).
func (q *QueueState) slotsOf(ctx context.Context, eventID boxoffice.ID) (int, error) {
	if k, ok := q.known.Get(eventID); ok {
		return k, nil
	}
	vs, err := q.client.Do(ctx, q.client.B().Hmget().Key(q.base(eventID)+"n").Field("init", "slots").Build()).ToArray()
	if err != nil || len(vs) != 2 {
		return 0, boxoffice.Unavailable("the queue state", fmt.Errorf("the event's slots: %v", err))
	}
	if init, _ := vs[0].ToString(); init != "1" {
		return q.configured(), nil
	}
	k := 1
	if v, err := vs[1].AsInt64(); err == nil && v > 1 {
		k = int(v)
	}
	q.known.Add(eventID, k)
	return k, nil
}

// maxKnown bounds the events whose slots a QueueState remembers.
const maxKnown = 1 << 16

// slotsOfAll is slotsOf for the events of a batch.
func (q *QueueState) slotsOfAll(ctx context.Context, events []boxoffice.ID) (map[boxoffice.ID]int, error) {
	out := make(map[boxoffice.ID]int, 1)
	for _, ev := range events {
		if _, ok := out[ev]; ok {
			continue
		}
		k, err := q.slotsOf(ctx, ev)
		if err != nil {
			return nil, err
		}
		out[ev] = k
	}
	return out, nil
}

// admitLua admits a batch of one event's requests (of one of its slots) in
// order, each as if alone. KEYS counters, waiting, then entry and live per
// request; ARGV ttl s, slots k, this slot j, then id, hash, maxLive,
// preQueue (0/1), request JSON per request.
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
local ttl, k, j = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local c = redis.call('HMGET', KEYS[1], 'admitted', 'waiting', 'opened')
local admitted = tonumber(c[1] or '0')
local waiting = tonumber(c[2] or '0')
local opened = c[3] == '1'
local admitted0, waiting0, opened0 = admitted, waiting, opened
for i = 1, n do
  local ek, lk, a = KEYS[1 + 2 * i], KEYS[2 + 2 * i], 4 + 5 * (i - 1)
  local h = redis.call('HGET', ek, 'hash')
  local live = 0
  if not h then live = tonumber(redis.call('GET', lk) or '0') end
  if h then
    if h ~= ARGV[a + 1] then out[i] = {'mismatch'} else out[i] = {'replay'} end
  elseif live >= tonumber(ARGV[a + 2]) then
    out[i] = {'busy'}
  else
    local status, pos = 'queued', 0
    if not opened and (ARGV[a + 3] == '1' or waiting > 0) then
      status = 'waiting'
      waiting = waiting + 1
      redis.call('RPUSH', KEYS[2], ek)
    else
      admitted = admitted + 1
      pos = (admitted - 1) * k + j + 1
      opened = true
    end
    -- The count read above, one more, and its expiry: one command.
    redis.call('SET', lk, live + 1, 'EX', ttl)
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
  redis.call('HINCRBY', KEYS[1], 'given', admitted - admitted0)
end
redis.call('EXPIRE', KEYS[1], ttl)
return out
`

// finishLua: KEYS entry, counters, live; ARGV status, reason, message,
// booking, held_until ms, finished_at ms, request id. Reply 1 if recorded,
// 0 if the entry is not this request's (gone, or a later request under the
// same key) or not queued.
// finishLua records the outcomes of a batch's requests of one slot: KEYS
// the slot's counters, then each request's entry and its user's live
// count; ARGV seven per request (status, reason, message, booking,
// held_until, finished_at, id). A request is decided only while its entry
// is still that request's and queued: the reply has 1 for each decided
// here, 0 for one decided before (a redelivery) or unknown. A live count
// that reaches zero is deleted, not kept at 0 until it expires: a sale of
// millions of users would leave a key per user for the queue's TTL.
const finishLua = `
local out, served = {}, 0
for i = 1, (#KEYS - 1) / 2 do
  local e, l, a = KEYS[2 * i], KEYS[2 * i + 1], (i - 1) * 7
  local cur = redis.call('HMGET', e, 'id', 'status')
  if cur[1] ~= ARGV[a + 7] or cur[2] ~= 'queued' then
    out[i] = 0
  else
    redis.call('HSET', e, 'status', ARGV[a + 1], 'reason', ARGV[a + 2], 'message', ARGV[a + 3],
      'booking', ARGV[a + 4], 'held_until', ARGV[a + 5], 'finished_at', ARGV[a + 6])
    if tonumber(redis.call('GET', l) or '0') > 1 then redis.call('DECR', l) else redis.call('DEL', l) end
    served = served + 1
    out[i] = 1
  end
end
if served > 0 then redis.call('HINCRBY', KEYS[1], 'served', served) end
return out
`

// The draw opens the pre-queue in steps, so that requests arriving
// meanwhile (the burst at the opening) never make it start over:
//
// closeLua, on each slot: KEYS counters, waiting, pool; ARGV ttl s. It
// freezes the slot's pre-queue: the waiting list becomes the pool to draw
// from, as many of the slot's positions are reserved (its counter moves
// from drawbase to drawend), and the slot opens, so that later arrivals
// queue behind the pool at once. Reply {'cold'} (see admitLua),
// {'drawing', drawbase, drawend} (a pool waits to be drawn, now or since a
// crash) or {'done'} (nothing left to draw).
const closeLua = `
if redis.call('HGET', KEYS[1], 'init') ~= '1' then return {'cold'} end
if redis.call('HGET', KEYS[1], 'opened') == '1' then
  if redis.call('EXISTS', KEYS[3]) == 1 then
    local c = redis.call('HMGET', KEYS[1], 'drawbase', 'drawend')
    local base = tonumber(c[1] or '0')
    return {'drawing', base, tonumber(c[2] or (base + redis.call('LLEN', KEYS[3])))}
  end
  return {'done'}
end
local n = redis.call('LLEN', KEYS[2])
local admitted = tonumber(redis.call('HGET', KEYS[1], 'admitted') or '0')
local released = 1
if n > 0 then
  released = 0
  redis.call('RENAME', KEYS[2], KEYS[3])
  redis.call('EXPIRE', KEYS[3], ARGV[1])
end
redis.call('HSET', KEYS[1], 'drawbase', admitted, 'drawend', admitted + n, 'admitted', admitted + n,
  'waiting', 0, 'opened', 1, 'released', released, 'drawn', 0)
redis.call('EXPIRE', KEYS[1], ARGV[1])
if n > 0 then return {'drawing', admitted, admitted + n} end
return {'done'}
`

// drawLua, on each slot with a pool: KEYS counters, pool, opened; ARGV ttl
// s, then entry key and position pairs of the slot's entries, in position
// order. It gives the entries still waiting those positions (one restored
// with a position after Redis lost it keeps it) and marks the slot drawn;
// the pool stays until every slot is drawn (Open drops them then), so that
// a draw cut short is drawn again over the same entries. Reply 'ok', or
// 'done' when there was no pool left.
const drawLua = `
if redis.call('EXISTS', KEYS[2]) == 0 then return 'done' end
if redis.call('HGET', KEYS[1], 'drawn') == '1' then return 'ok' end
local n = 0
for i = 2, #ARGV, 2 do
  local k = ARGV[i]
  if redis.call('HGET', k, 'status') == 'waiting' then
    redis.call('HSET', k, 'pos', ARGV[i + 1], 'status', 'queued', 'drawn', 1)
    redis.call('RPUSH', KEYS[3], k)
    n = n + 1
  end
end
if n > 0 then redis.call('EXPIRE', KEYS[3], ARGV[1]) end
redis.call('HSET', KEYS[1], 'drawn', 1)
redis.call('HINCRBY', KEYS[1], 'given', n)
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

// AdmitMany admits a batch: one script per event slot (its hash slot) and
// the requests' id index entries, all in one pipelined round trip. The
// index is written before the verdict is known: for a replay or a refusal
// it names an id nobody was given, which is harmless.
func (q *QueueState) AdmitMany(ctx context.Context, as []boxoffice.Admission) ([]boxoffice.Admitted, error) {
	ctx, cancel := q.ctx(ctx)
	defer cancel()
	events := make([]boxoffice.ID, len(as))
	for i, a := range as {
		events[i] = a.Request.EventID
	}
	slots, err := q.slotsOfAll(ctx, events)
	if err != nil {
		return nil, err
	}
	type group struct {
		idx        []int
		keys, args []string
	}
	type slotOf struct {
		event boxoffice.ID
		j     int
	}
	var groups []*group
	byslot := map[slotOf]*group{}
	var body []byte
	for i, a := range as {
		r := a.Request
		k := slots[r.EventID]
		j := UserSlot(r.UserID, k)
		g := byslot[slotOf{r.EventID, j}]
		if g == nil {
			slot := q.slot(r.EventID, j, k)
			g = &group{keys: []string{slot + "n", slot + "waiting"}, args: []string{q.ttlSeconds(), strconv.Itoa(k), strconv.Itoa(j)}}
			byslot[slotOf{r.EventID, j}] = g
			groups = append(groups, g)
		}
		body = r.AppendJSON(body[:0])
		pre := "0"
		if a.PreQueue {
			pre = "1"
		}
		entry, live := q.userKeys(r.EventID, k, r.UserID, r.IdempotencyKey)
		g.idx = append(g.idx, i)
		g.keys = append(g.keys, entry, live)
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
	for n, g := range groups {
		resp := res[n]
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
		q.remember(e.Request)
		return boxoffice.Admitted{Entry: e, Replay: true}, nil
	}
	if len(res) < 3 {
		return boxoffice.Admitted{}, boxoffice.Unavailable("the queue state", fmt.Errorf("admission verdict %q", verdict))
	}
	pos, _ := res[1].AsInt64()
	status, _ := res[2].ToString()
	row := *r
	row.Position = pos
	q.remember(r)
	return boxoffice.Admitted{Entry: &boxoffice.QueueEntry{Request: &row, Status: boxoffice.QueueStatus(status)}}, nil
}

func (q *QueueState) indexCmd(r *boxoffice.QueuedRequest) rueidis.Completed {
	var a [128]byte
	v := jsonappend.Strings(a[:0], []string{r.EventID.String(), r.UserID, r.IdempotencyKey})
	return q.client.B().Set().Key(q.idKey(r.ID)).Value(string(v)).Ex(q.TTL).Build()
}

func (q *QueueState) index(ctx context.Context, r *boxoffice.QueuedRequest) error {
	err := q.client.Do(ctx, q.indexCmd(r)).Error()
	if err != nil {
		return boxoffice.Unavailable("the queue state", err)
	}
	return nil
}

// lookup finds the entry key of a request id, and the request if this
// process has it: from ids, or from the id index.
func (q *QueueState) lookup(ctx context.Context, id boxoffice.ID) (string, *boxoffice.QueuedRequest, error) {
	ref, ok := q.ids.Get(id)
	if !ok {
		var err error
		if ref, err = q.readIndex(ctx, id); err != nil {
			return "", nil, err
		}
		q.ids.Add(id, ref)
	}
	k, err := q.slotsOf(ctx, ref.event)
	if err != nil {
		return "", nil, err
	}
	return q.entryKey(ref.event, k, ref.user, ref.key), ref.req, nil
}

// remember adds a request and its place to ids.
func (q *QueueState) remember(r *boxoffice.QueuedRequest) {
	c := *r
	q.ids.Add(r.ID, idRef{event: r.EventID, user: r.UserID, key: r.IdempotencyKey, req: &c})
}

// readIndex reads a request id's entry in the id index.
func (q *QueueState) readIndex(ctx context.Context, id boxoffice.ID) (idRef, error) {
	v, err := q.client.Do(ctx, q.client.B().Get().Key(q.idKey(id)).Build()).ToString()
	if rueidis.IsRedisNil(err) {
		return idRef{}, boxoffice.Errorf(boxoffice.ENOTFOUND, "no queued request %d", id)
	}
	if err != nil {
		return idRef{}, boxoffice.Unavailable("the queue state", err)
	}
	var parts []string
	if json.Unmarshal([]byte(v), &parts) != nil || len(parts) != 3 {
		return idRef{}, boxoffice.Errorf(boxoffice.ENOTFOUND, "no queued request %d", id)
	}
	ev, err := boxoffice.ParseID(parts[0])
	if err != nil {
		return idRef{}, boxoffice.Errorf(boxoffice.ENOTFOUND, "no queued request %d", id)
	}
	return idRef{event: ev, user: parts[1], key: parts[2]}, nil
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
	if err := boxoffice.DecodeQueuedRequest([]byte(m["req"]), &r); err != nil {
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
	k, err := q.slotsOf(ctx, eventID)
	if err != nil {
		return nil, err
	}
	return q.entry(ctx, q.entryKey(eventID, k, userID, key))
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
	slots, err := q.slotsOfAll(ctx, requestEvents(rs))
	if err != nil {
		return nil, err
	}
	cmds := make(rueidis.Commands, len(rs))
	for i, r := range rs {
		cmds[i] = q.stateCmd(q.entryKey(r.EventID, slots[r.EventID], r.UserID, r.IdempotencyKey))
	}
	for i, res := range q.client.DoMulti(ctx, cmds...) {
		if out[i], err = stateEntry(res, rs[i]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// stateCmd reads the state fields of the entry under key.
func (q *QueueState) stateCmd(key string) rueidis.Completed {
	return q.client.B().Hmget().Key(key).Field(stateFields...).Build()
}

// stateEntry is r's entry from the reply to its stateCmd, with r as its
// request; nil when the key holds no entry, or another request's.
func stateEntry(res rueidis.RedisResult, r *boxoffice.QueuedRequest) (*boxoffice.QueueEntry, error) {
	vs, err := res.ToArray()
	if err != nil {
		return nil, boxoffice.Unavailable("the queue state", err)
	}
	m := make(map[string]string, len(stateFields))
	for j, v := range vs {
		if s, err := v.ToString(); err == nil && j < len(stateFields) {
			m[stateFields[j]] = s
		}
	}
	if m["id"] != r.ID.String() {
		return nil, nil
	}
	c := *r
	return decodeState(m, &c), nil
}

func requestEvents(rs []*boxoffice.QueuedRequest) []boxoffice.ID {
	out := make([]boxoffice.ID, len(rs))
	for i, r := range rs {
		out[i] = r.EventID
	}
	return out
}

// stateFields are an entry's fields besides its request.
var stateFields = []string{"id", "pos", "status", "reason", "message", "booking", "held_until", "finished_at"}

// Entry returns a request's entry, or ENOTFOUND.
func (q *QueueState) Entry(ctx context.Context, id boxoffice.ID) (*boxoffice.QueueEntry, error) {
	ctx, cancel := q.ctx(ctx)
	defer cancel()
	key, req, err := q.lookup(ctx, id)
	if err != nil {
		return nil, err
	}
	var e *boxoffice.QueueEntry
	if req != nil {
		e, err = stateEntry(q.client.Do(ctx, q.stateCmd(key)), req)
	} else {
		e, err = q.entry(ctx, key)
	}
	if err != nil {
		return nil, err
	}
	if e == nil || e.Request.ID != id {
		// None, or a later request's under the same key: this one's is
		// gone (its index would have expired with it).
		return nil, boxoffice.Errorf(boxoffice.ENOTFOUND, "no queued request %d", id)
	}
	if req == nil {
		q.remember(e.Request)
	}
	return e, nil
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
	first := make([]bool, len(rs))
	if len(rs) == 0 {
		return first, nil
	}
	ctx, cancel := q.ctx(ctx)
	defer cancel()
	slots, err := q.slotsOfAll(ctx, requestEvents(rs))
	if err != nil {
		return nil, err
	}
	// One script call per slot for the whole batch: the requests of an
	// event's slot share its hash tag.
	type group struct {
		exec rueidis.LuaExec
		of   []int // the requests of the group, in batch order
	}
	var groups []*group
	bySlot := map[string]*group{}
	for i, r := range rs {
		o := os[i]
		var held int64
		if !o.HeldUntil.IsZero() {
			held = o.HeldUntil.UnixMilli()
		}
		k := slots[r.EventID]
		counters := q.slot(r.EventID, UserSlot(r.UserID, k), k) + "n"
		g := bySlot[counters]
		if g == nil {
			g = &group{exec: rueidis.LuaExec{Keys: []string{counters}}}
			bySlot[counters] = g
			groups = append(groups, g)
		}
		entry, live := q.userKeys(r.EventID, k, r.UserID, r.IdempotencyKey)
		g.exec.Keys = append(g.exec.Keys, entry, live)
		g.exec.Args = append(g.exec.Args, string(o.Status), o.Reason, o.Message, o.BookingID.String(), strconv.FormatInt(held, 10),
			strconv.FormatInt(o.FinishedAt.UnixMilli(), 10), r.ID.String())
		g.of = append(g.of, i)
	}
	execs := make([]rueidis.LuaExec, len(groups))
	for j, g := range groups {
		execs[j] = g.exec
	}
	for j, res := range finishScript.execMulti(ctx, q.client, execs) {
		done, err := res.AsIntSlice()
		if err != nil || len(done) != len(groups[j].of) {
			if err == nil {
				err = fmt.Errorf("the finish script answered %d outcomes for %d requests", len(done), len(groups[j].of))
			}
			return nil, boxoffice.Unavailable("the queue state", err)
		}
		for n, i := range groups[j].of {
			first[i] = done[n] == 1
		}
	}
	return first, nil
}

// Open draws the pre-queue's positions; see boxoffice.QueueState. On k
// slots: every slot freezes its share of the pre-queue and reserves as
// many of its positions (closeLua, one round trip for all); the shares are
// drawn as one, and the reserved positions, sorted, go out in drawn order;
// each slot then gives its entries theirs (drawLua) and the pools go.
// Drawn order and position order agree; a slot that reserved few
// positions goes on with later arrivals meanwhile, so they may fall
// between drawn ones (the published order marks those as gaps). A draw cut
// short is drawn again the same way: the pools stay until every slot is
// drawn, and an entry drawn before is drawn again with the others.
func (q *QueueState) Open(ctx context.Context, eventID boxoffice.ID, draw func(ids []boxoffice.ID) []boxoffice.ID) ([]*boxoffice.QueuedRequest, error) {
	// Not one call's timeout: a big pre-queue is read and drawn in several
	// round trips, by the opener, not for a waiting client.
	ctx, cancel := context.WithTimeout(ctx, openTimeout)
	defer cancel()
	k, err := q.slotsOf(ctx, eventID)
	if err != nil {
		return nil, err
	}
	execs := make([]rueidis.LuaExec, k)
	for j := range k {
		slot := q.slot(eventID, j, k)
		execs[j] = rueidis.LuaExec{Keys: []string{slot + "n", slot + "waiting", slot + "pool"}, Args: []string{q.ttlSeconds()}}
	}
	var pools []pool
	for j, res := range closeScript.execMulti(ctx, q.client, execs) {
		v, err := res.ToArray()
		if err != nil || len(v) == 0 {
			return nil, boxoffice.Unavailable("the queue state", fmt.Errorf("closing slot %d: %v", j, err))
		}
		switch verdict, _ := v[0].ToString(); verdict {
		case "cold":
			return nil, boxoffice.QueueColdError()
		case "drawing":
			if len(v) != 3 {
				return nil, boxoffice.Unavailable("the queue state", fmt.Errorf("closing slot %d: %d values", j, len(v)))
			}
			p := pool{j: j}
			p.base, _ = v[1].AsInt64()
			p.end, _ = v[2].AsInt64()
			pools = append(pools, p)
		}
	}
	if len(pools) > 0 {
		if err := q.drawPools(ctx, eventID, k, pools, draw); err != nil {
			return nil, err
		}
	}
	return q.opened(ctx, eventID, k)
}

// pool is a slot's frozen share of the pre-queue: the slot's positions
// base+1..end (in its own numbering) are reserved for it.
type pool struct {
	j         int
	base, end int64
	keys      []string // its entries' keys
}

// drawPools draws the frozen pools as one and gives their entries the
// reserved positions in drawn order.
func (q *QueueState) drawPools(ctx context.Context, eventID boxoffice.ID, k int, pools []pool, draw func(ids []boxoffice.ID) []boxoffice.ID) error {
	cmds := make(rueidis.Commands, len(pools))
	for i, p := range pools {
		cmds[i] = q.client.B().Lrange().Key(q.slot(eventID, p.j, k) + "pool").Start(0).Stop(-1).Build()
	}
	var keys []string
	var reserved []int64
	for i, res := range q.client.DoMulti(ctx, cmds...) {
		ks, err := res.AsStrSlice()
		if err != nil {
			return boxoffice.Unavailable("the queue state", err)
		}
		pools[i].keys = ks
		keys = append(keys, ks...)
		for l := pools[i].base + 1; l <= pools[i].end; l++ {
			reserved = append(reserved, position(l, pools[i].j, k))
		}
	}
	slices.Sort(reserved)
	drawn, err := q.drawKeys(ctx, keys, draw)
	if err != nil {
		return err
	}
	if len(drawn) > len(reserved) {
		return boxoffice.Errorf(boxoffice.EINTERNAL, "%d requests drawn for %d positions", len(drawn), len(reserved))
	}
	posOf := make(map[string]int64, len(drawn))
	for i, key := range drawn {
		posOf[key] = reserved[i]
	}
	execs := make([]rueidis.LuaExec, len(pools))
	for i, p := range pools {
		slot := q.slot(eventID, p.j, k)
		args := []string{q.ttlSeconds()}
		mine := make([]string, 0, len(p.keys))
		for _, key := range p.keys {
			if _, ok := posOf[key]; ok {
				mine = append(mine, key)
			}
		}
		slices.SortFunc(mine, func(a, b string) int { return cmp.Compare(posOf[a], posOf[b]) })
		for _, key := range mine {
			args = append(args, key, strconv.FormatInt(posOf[key], 10))
		}
		execs[i] = rueidis.LuaExec{Keys: []string{slot + "n", slot + "pool", slot + "opened"}, Args: args}
	}
	for _, res := range drawScript.execMulti(ctx, q.client, execs) {
		if err := res.Error(); err != nil {
			return boxoffice.Unavailable("the queue state", err)
		}
	}
	// Every slot is drawn: the pools go, and with them the way back.
	cmds = make(rueidis.Commands, len(pools))
	for i, p := range pools {
		cmds[i] = q.client.B().Del().Key(q.slot(eventID, p.j, k) + "pool").Build()
	}
	for _, res := range q.client.DoMulti(ctx, cmds...) {
		if err := res.Error(); err != nil {
			return boxoffice.Unavailable("the queue state", err)
		}
	}
	return nil
}

// opened returns the drawn requests of every slot, in position order.
func (q *QueueState) opened(ctx context.Context, eventID boxoffice.ID, k int) ([]*boxoffice.QueuedRequest, error) {
	cmds := make(rueidis.Commands, k)
	for j := range k {
		cmds[j] = q.client.B().Lrange().Key(q.slot(eventID, j, k) + "opened").Start(0).Stop(-1).Build()
	}
	var keys []string
	for _, res := range q.client.DoMulti(ctx, cmds...) {
		ks, err := res.AsStrSlice()
		if err != nil {
			return nil, boxoffice.Unavailable("the queue state", err)
		}
		keys = append(keys, ks...)
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
	if k > 1 {
		slices.SortFunc(out, func(a, b *boxoffice.QueuedRequest) int { return cmp.Compare(a.Position, b.Position) })
	}
	return out, nil
}

// openTimeout bounds Open: reading a pre-queue of a million entries, the
// draw and the scripts.
const openTimeout = time.Minute

// drawKeys reads the ids of the pool entries to draw and returns their
// keys in the order draw gives their ids. Those are the entries still
// waiting and those a draw cut short gave a position already (drawn=1):
// the same set as the first time, so the same order. An entry that has a
// position otherwise (a state restored after Redis lost it) keeps it.
func (q *QueueState) drawKeys(ctx context.Context, keys []string, draw func(ids []boxoffice.ID) []boxoffice.ID) ([]string, error) {
	byID := make(map[boxoffice.ID]string, len(keys))
	ids := make([]boxoffice.ID, 0, len(keys))
	for i := 0; i < len(keys); i += 1000 {
		chunk := keys[i:min(i+1000, len(keys))]
		cmds := make(rueidis.Commands, len(chunk))
		for j, k := range chunk {
			cmds[j] = q.client.B().Hmget().Key(k).Field("id", "status", "drawn").Build()
		}
		for j, res := range q.client.DoMulti(ctx, cmds...) {
			f, err := res.ToArray()
			if err != nil || len(f) != 3 {
				return nil, boxoffice.Unavailable("the queue state", fmt.Errorf("entry %q: %v", chunk[j], err))
			}
			idText, _ := f[0].ToString()
			status, _ := f[1].ToString()
			drawn, _ := f[2].ToString()
			id, err := boxoffice.ParseID(idText)
			if (status != string(boxoffice.QueueWaiting) && drawn != "1") || err != nil {
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

// counters reads the counters of every slot of an event, in one round trip.
func (q *QueueState) counters(ctx context.Context, eventID boxoffice.ID, k int) ([]map[string]string, error) {
	cmds := make(rueidis.Commands, k)
	for j := range k {
		cmds[j] = q.client.B().Hgetall().Key(q.slot(eventID, j, k) + "n").Build()
	}
	out := make([]map[string]string, k)
	for j, res := range q.client.DoMulti(ctx, cmds...) {
		m, err := res.AsStrMap()
		if err != nil {
			return nil, boxoffice.Unavailable("the queue state", err)
		}
		out[j] = m
	}
	return out, nil
}

// Progress returns the event's queue counters, summed over its slots.
func (q *QueueState) Progress(ctx context.Context, eventID boxoffice.ID) (boxoffice.QueueProgress, error) {
	ctx, cancel := q.ctx(ctx)
	defer cancel()
	k, err := q.slotsOf(ctx, eventID)
	if err != nil {
		return boxoffice.QueueProgress{}, err
	}
	ms, err := q.counters(ctx, eventID, k)
	if err != nil {
		return boxoffice.QueueProgress{}, err
	}
	num := func(m map[string]string, f string) int64 {
		n, _ := strconv.ParseInt(m[f], 10, 64)
		return n
	}
	p := boxoffice.QueueProgress{Opened: true, Released: true}
	cold := false
	for j, m := range ms {
		p.Served += num(m, "served")
		p.Waiting += num(m, "waiting")
		p.Opened = p.Opened && m["opened"] == "1"
		p.Released = p.Released && m["released"] == "1"
		cold = cold || m["init"] != "1"
		if k == 1 {
			p.Admitted, p.SoldOutUpTo = num(m, "admitted"), num(m, "soldout")
			continue
		}
		p.Admitted += num(m, "given")
		s := boxoffice.QueueSlot{Last: position(num(m, "admitted"), j, k), SoldOutUpTo: position(num(m, "soldout"), j, k)}
		p.Slots = append(p.Slots, s)
		p.SoldOutUpTo = max(p.SoldOutUpTo, s.SoldOutUpTo)
	}
	if cold {
		return p, boxoffice.QueueColdError()
	}
	return p, nil
}

// MarkSoldOut raises each slot's sold-out mark to its highest position
// given, in one script per slot, and returns the highest mark.
func (q *QueueState) MarkSoldOut(ctx context.Context, eventID boxoffice.ID) (int64, error) {
	ctx, cancel := q.ctx(ctx)
	defer cancel()
	k, err := q.slotsOf(ctx, eventID)
	if err != nil {
		return 0, err
	}
	execs := make([]rueidis.LuaExec, k)
	for j := range k {
		execs[j] = rueidis.LuaExec{Keys: []string{q.slot(eventID, j, k) + "n"}}
	}
	var upTo int64
	for j, res := range soldOutScript.execMulti(ctx, q.client, execs) {
		if s, err := res.ToString(); err == nil && s == "cold" {
			return 0, boxoffice.QueueColdError()
		}
		mark, err := res.AsInt64()
		if err != nil {
			return 0, boxoffice.Unavailable("the queue state", err)
		}
		upTo = max(upTo, position(mark, j, k))
	}
	return upTo, nil
}

// soldOutLua: KEYS a slot's counters. Reply 'cold' (see admitLua) or the
// slot's sold-out mark (in its own numbering), raised to the last it gave.
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
	k, err := q.slotsOf(ctx, eventID)
	if err != nil {
		return err
	}
	cmds := make(rueidis.Commands, k)
	for j := range k {
		cmds[j] = q.client.B().Hset().Key(q.slot(eventID, j, k)+"n").FieldValue().FieldValue("released", "1").Build()
	}
	for _, res := range q.client.DoMulti(ctx, cmds...) {
		if err := res.Error(); err != nil {
			return boxoffice.Unavailable("the queue state", err)
		}
	}
	return nil
}
