package redis

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/redis/rueidis"

	"github.com/boxoffice/boxoffice"
)

// The queue state is a cache. Redis may lose it at any moment (a restart
// without persistence, a failover to a replica that lagged); the durable
// record is the request log (Kafka) and the outcome journal (PostgreSQL),
// and package queuestate rebuilds the state from them with the methods
// here. Two marks tell a complete state from a lost one:
//
//   - each event's counters carry init=1, written by Init or Seal; the
//     admission and opening scripts refuse an event without it ("cold"),
//     so a Redis that came back empty never gives positions from 1 again;
//   - the epoch key <p>q:epoch lists the run ids of the Redis nodes whose
//     state was complete when it was last written; a node that restarted or
//     a replica that took over has another run id.

// initLua: KEYS a slot's counters; ARGV ttl s, the event's slots, then
// the run ids of the epoch (none: no check). Reply the event's slots as
// recorded if it is initialized (now or before; 1 if recorded before slots
// were), 0 if this node is not one of the epoch's: its data may be gone,
// so only a rebuild may initialize it.
const initLua = `
if redis.call('HGET', KEYS[1], 'init') == '1' then
  return tonumber(redis.call('HGET', KEYS[1], 'slots') or '1')
end
if #ARGV > 2 then
  local id = string.match(redis.call('INFO', 'server'), 'run_id:(%x+)')
  local known = false
  for i = 3, #ARGV do
    if ARGV[i] == id then known = true end
  end
  if not known then return 0 end
end
redis.call('HSET', KEYS[1], 'init', 1, 'slots', ARGV[2])
redis.call('EXPIRE', KEYS[1], ARGV[1])
return tonumber(ARGV[2])
`

// restoreLua merges requests into an event's state. KEYS: entry_i, live_i
// pairs; ARGV: ttl s, then 10 per request: id, hash, request JSON,
// position, status, reason, message, booking, held_until ms, finished_at
// ms. A missing entry is written (and counted live unless final); an
// existing one only moves forward: a higher position (its drawn copy), an
// outcome where it had none.
const restoreLua = `
local ttl = ARGV[1]
for i = 1, #KEYS / 2 do
  local ek, lk = KEYS[2 * i - 1], KEYS[2 * i]
  local a = 1 + (i - 1) * 10
  local pos, status = tonumber(ARGV[a + 4]), ARGV[a + 5]
  local final = status == 'held' or status == 'rejected'
  local cur = redis.call('HMGET', ek, 'status', 'pos')
  if not cur[1] then
    redis.call('HSET', ek, 'id', ARGV[a + 1], 'hash', ARGV[a + 2], 'req', ARGV[a + 3], 'pos', pos, 'status', status)
    if final then
      redis.call('HSET', ek, 'reason', ARGV[a + 6], 'message', ARGV[a + 7], 'booking', ARGV[a + 8],
        'held_until', ARGV[a + 9], 'finished_at', ARGV[a + 10])
    else
      redis.call('INCR', lk)
      redis.call('EXPIRE', lk, ttl)
    end
    redis.call('EXPIRE', ek, ttl)
  else
    local was = cur[1] == 'held' or cur[1] == 'rejected'
    if not was and pos > tonumber(cur[2] or '0') then
      redis.call('HSET', ek, 'pos', pos, 'status', 'queued')
    end
    if final and not was then
      redis.call('HSET', ek, 'status', status, 'reason', ARGV[a + 6], 'message', ARGV[a + 7], 'booking', ARGV[a + 8],
        'held_until', ARGV[a + 9], 'finished_at', ARGV[a + 10])
      if tonumber(redis.call('GET', lk) or '0') > 1 then redis.call('DECR', lk) else redis.call('DEL', lk) end
    end
  end
end
return 1
`

// sealLua finishes the rebuild of an event's slot. KEYS counters,
// waiting; ARGV admitted (the slot's last position, in its own numbering),
// served, ttl s, given, slots, then the entry keys still waiting for the
// draw, in arrival order. Counters only grow; a slot opened before stays
// opened; otherwise the waiting entries join the pre-queue (those not in
// it yet) and the slot stays unopened if there are any, so the opener
// draws them. Then init=1: the slot takes admissions again.
const sealLua = `
local c = redis.call('HMGET', KEYS[1], 'admitted', 'served', 'opened', 'given')
local admitted = math.max(tonumber(c[1] or '0'), tonumber(ARGV[1]))
local served = math.max(tonumber(c[2] or '0'), tonumber(ARGV[2]))
local given = math.max(tonumber(c[4] or '0'), tonumber(ARGV[4]))
redis.call('HSET', KEYS[1], 'admitted', admitted, 'served', served, 'given', given)
if c[3] ~= '1' then
  local have = {}
  for _, k in ipairs(redis.call('LRANGE', KEYS[2], 0, -1)) do have[k] = true end
  for i = 6, #ARGV do
    if not have[ARGV[i]] then
      redis.call('RPUSH', KEYS[2], ARGV[i])
      have[ARGV[i]] = true
    end
  end
  local waiting = redis.call('LLEN', KEYS[2])
  if waiting > 0 then
    redis.call('HSET', KEYS[1], 'waiting', waiting, 'opened', 0)
    redis.call('EXPIRE', KEYS[2], ARGV[3])
  elseif admitted > 0 then
    redis.call('HSET', KEYS[1], 'waiting', 0, 'opened', 1, 'released', 1)
  end
end
redis.call('HSET', KEYS[1], 'init', 1)
if not redis.call('HGET', KEYS[1], 'slots') then redis.call('HSET', KEYS[1], 'slots', ARGV[5]) end
redis.call('EXPIRE', KEYS[1], ARGV[3])
return 1
`

var (
	initScript    = newScript(initLua)
	restoreScript = newScript(restoreLua)
	sealScript    = newScript(sealLua)
)

// Init marks an event's state as initialized, so that it takes admissions,
// if the nodes holding it are of epoch (the run ids of the nodes whose
// state was complete at the last rebuild); it reports false otherwise, and
// the state must be rebuilt first. An empty epoch initializes without a
// check (tests, a fresh deployment's first event). The event's first slot
// records how many slots it has (Slots, unless it has a number already);
// then the others are initialized.
func (q *QueueState) Init(ctx context.Context, eventID boxoffice.ID, epoch []string) (bool, error) {
	ctx, cancel := q.ctx(ctx)
	defer cancel()
	args := append([]string{q.ttlSeconds(), strconv.Itoa(q.configured())}, epoch...)
	k, err := initScript.exec(ctx, q.client, []string{q.base(eventID) + "n"}, args).AsInt64()
	if err != nil {
		return false, boxoffice.Unavailable("the queue state", err)
	}
	if k == 0 {
		return false, nil
	}
	if k > 1 {
		args[1] = strconv.FormatInt(k, 10)
		execs := make([]rueidis.LuaExec, k)
		for j := range execs {
			execs[j] = rueidis.LuaExec{Keys: []string{q.slot(eventID, j, int(k)) + "n"}, Args: args}
		}
		for _, res := range initScript.execMulti(ctx, q.client, execs) {
			n, err := res.AsInt64()
			if err != nil {
				return false, boxoffice.Unavailable("the queue state", err)
			}
			if n == 0 {
				return false, nil
			}
		}
	}
	q.known.Add(eventID, int(k))
	return true, nil
}

// Nodes returns the run ids of the Redis nodes, sorted: each changes when
// its node restarts or another takes its place.
func (q *QueueState) Nodes(ctx context.Context) ([]string, error) {
	ctx, cancel := q.ctx(ctx)
	defer cancel()
	var ids []string
	for _, node := range q.client.Nodes() {
		info, err := node.Do(ctx, node.B().Info().Section("server").Build()).ToString()
		if err != nil {
			return nil, boxoffice.Unavailable("the queue state", err)
		}
		for line := range strings.Lines(info) {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "run_id:"); ok {
				ids = append(ids, v)
			}
		}
	}
	slices.Sort(ids)
	return ids, nil
}

func (q *QueueState) epochKey() string { return q.prefix + "q:epoch" }

// Epoch returns the run ids recorded by SetEpoch, or nil if there are none
// (never written, or lost with its node).
func (q *QueueState) Epoch(ctx context.Context) ([]string, error) {
	ctx, cancel := q.ctx(ctx)
	defer cancel()
	v, err := q.client.Do(ctx, q.client.B().Get().Key(q.epochKey()).Build()).ToString()
	if rueidis.IsRedisNil(err) {
		return nil, nil
	}
	if err != nil {
		return nil, boxoffice.Unavailable("the queue state", err)
	}
	return strings.Split(v, ","), nil
}

// SetEpoch records the run ids of the nodes whose state is now complete.
func (q *QueueState) SetEpoch(ctx context.Context, nodes []string) error {
	ctx, cancel := q.ctx(ctx)
	defer cancel()
	if err := q.client.Do(ctx, q.client.B().Set().Key(q.epochKey()).Value(strings.Join(nodes, ",")).Build()).Error(); err != nil {
		return boxoffice.Unavailable("the queue state", err)
	}
	return nil
}

// Restore merges entries of one event into its state (see restoreLua) and
// writes their id index; Request.Position 0 with status waiting is a
// request of the pre-queue. It never moves an entry back, so it is safe to
// run over a state that lost only part of its data, and to run twice.
func (q *QueueState) Restore(ctx context.Context, eventID boxoffice.ID, entries []*boxoffice.QueueEntry) error {
	ctx, cancel := q.ctx(ctx)
	defer cancel()
	k, err := q.slotsOf(ctx, eventID)
	if err != nil {
		return err
	}
	bySlot := make([][]*boxoffice.QueueEntry, k)
	for _, e := range entries {
		j := UserSlot(e.Request.UserID, k)
		bySlot[j] = append(bySlot[j], e)
	}
	for _, entries := range bySlot {
		for len(entries) > 0 {
			chunk := entries[:min(len(entries), 200)]
			entries = entries[len(chunk):]
			if err := q.restore(ctx, eventID, k, chunk); err != nil {
				return err
			}
		}
	}
	return nil
}

// restore merges entries of one slot.
func (q *QueueState) restore(ctx context.Context, eventID boxoffice.ID, k int, chunk []*boxoffice.QueueEntry) error {
	keys := make([]string, 0, 2*len(chunk))
	args := make([]string, 1, 1+10*len(chunk))
	args[0] = q.ttlSeconds()
	cmds := make(rueidis.Commands, 0, len(chunk))
	for _, e := range chunk {
		r := e.Request
		body, err := json.Marshal(r)
		if err != nil {
			return err
		}
		var held, finished int64
		if !e.HeldUntil.IsZero() {
			held = e.HeldUntil.UnixMilli()
		}
		if !e.FinishedAt.IsZero() {
			finished = e.FinishedAt.UnixMilli()
		}
		entry, live := q.userKeys(eventID, k, r.UserID, r.IdempotencyKey)
		keys = append(keys, entry, live)
		args = append(args, r.ID.String(), r.RequestHash, string(body), strconv.FormatInt(r.Position, 10),
			string(e.Status), e.Reason, e.Message, e.BookingID.String(), strconv.FormatInt(held, 10),
			strconv.FormatInt(finished, 10))
		cmds = append(cmds, q.indexCmd(r))
	}
	if err := restoreScript.exec(ctx, q.client, keys, args).Error(); err != nil {
		return boxoffice.Unavailable("the queue state", err)
	}
	for _, res := range q.client.DoMulti(ctx, cmds...) {
		if err := res.Error(); err != nil {
			return boxoffice.Unavailable("the queue state", err)
		}
	}
	return nil
}

// Seal ends an event's rebuild (see sealLua): highest is the highest
// position in the log, given the number of requests there with one, served
// the outcomes on record, waiting the requests still waiting for the draw
// in the order given. Each slot's counter is raised past every position of
// its own below highest, so that no position is given twice; the counts
// are each slot's own (which a rebuild after a partial loss keeps), the
// first slot taking what the others do not account for.
func (q *QueueState) Seal(ctx context.Context, eventID boxoffice.ID, highest, given, served int64, waiting []*boxoffice.QueuedRequest) error {
	ctx, cancel := q.ctx(ctx)
	defer cancel()
	k, err := q.slotsOf(ctx, eventID)
	if err != nil {
		return err
	}
	if k > 1 {
		cmds := make(rueidis.Commands, k-1)
		for j := range cmds {
			cmds[j] = q.client.B().Hmget().Key(q.slot(eventID, j+1, k)+"n").Field("given", "served").Build()
		}
		for _, res := range q.client.DoMulti(ctx, cmds...) {
			vs, err := res.ToArray()
			if err != nil || len(vs) != 2 {
				return boxoffice.Unavailable("the queue state", fmt.Errorf("a slot's counters: %v", err))
			}
			g, _ := vs[0].AsInt64()
			s, _ := vs[1].AsInt64()
			given, served = given-g, served-s
		}
	}
	waitingBy := make([][]string, k)
	for _, r := range waiting {
		j := UserSlot(r.UserID, k)
		waitingBy[j] = append(waitingBy[j], q.entryKey(eventID, k, r.UserID, r.IdempotencyKey))
	}
	execs := make([]rueidis.LuaExec, k)
	for j := range k {
		var last int64 // the number of slot j's positions up to highest
		if highest > int64(j) {
			last = (highest-int64(j)-1)/int64(k) + 1
		}
		g, s := max(0, given), max(0, served)
		if j > 0 {
			g, s = 0, 0
		}
		slot := q.slot(eventID, j, k)
		args := append([]string{strconv.FormatInt(last, 10), strconv.FormatInt(s, 10), q.ttlSeconds(),
			strconv.FormatInt(g, 10), strconv.Itoa(k)}, waitingBy[j]...)
		execs[j] = rueidis.LuaExec{Keys: []string{slot + "n", slot + "waiting"}, Args: args}
	}
	for _, res := range sealScript.execMulti(ctx, q.client, execs) {
		if err := res.Error(); err != nil {
			return boxoffice.Unavailable("the queue state", err)
		}
	}
	if k > 1 {
		// The record of the event's slots, last: with it the event is
		// found initialized.
		args := []string{q.ttlSeconds(), strconv.Itoa(k)}
		if err := initScript.exec(ctx, q.client, []string{q.base(eventID) + "n"}, args).Error(); err != nil {
			return boxoffice.Unavailable("the queue state", err)
		}
	}
	return nil
}

// EvictionPolicy returns the maxmemory-policy of every node that does not
// run "noeviction" (node address → policy). The queue's state notices a
// restart or a failover, not a key evicted under maxmemory, so the queue's
// Redis must not evict. A node that refuses CONFIG GET (a managed Redis)
// is left out.
func EvictionPolicy(ctx context.Context, client rueidis.Client) map[string]string {
	out := map[string]string{}
	for addr, node := range client.Nodes() {
		m, err := node.Do(ctx, node.B().ConfigGet().Parameter("maxmemory-policy").Build()).AsStrMap()
		if err != nil {
			continue
		}
		if p := m["maxmemory-policy"]; p != "" && p != "noeviction" {
			out[addr] = p
		}
	}
	return out
}
