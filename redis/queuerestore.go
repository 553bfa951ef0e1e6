package redis

import (
	"context"
	"encoding/json"
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

// initLua: KEYS counters; ARGV ttl s, then the run ids of the epoch (none:
// no check). Reply 1 if the event is initialized (now or before), 0 if this
// node is not one of the epoch's: its data may be gone, so only a rebuild
// may initialize it.
const initLua = `
if redis.call('HGET', KEYS[1], 'init') == '1' then return 1 end
if #ARGV > 1 then
  local id = string.match(redis.call('INFO', 'server'), 'run_id:(%x+)')
  local known = false
  for i = 2, #ARGV do
    if ARGV[i] == id then known = true end
  end
  if not known then return 0 end
end
redis.call('HSET', KEYS[1], 'init', 1)
redis.call('EXPIRE', KEYS[1], ARGV[1])
return 1
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
      if tonumber(redis.call('GET', lk) or '0') > 0 then redis.call('DECR', lk) end
    end
  end
end
return 1
`

// sealLua finishes an event's rebuild. KEYS counters, waiting; ARGV
// admitted, served, ttl s, then the entry keys still waiting for the draw,
// in arrival order. Counters only grow; an event opened before stays
// opened; otherwise the waiting entries join the pre-queue (those not in
// it yet) and the event stays unopened if there are any, so the opener
// draws them. Then init=1: the event takes admissions again.
const sealLua = `
local c = redis.call('HMGET', KEYS[1], 'admitted', 'served', 'opened')
local admitted = math.max(tonumber(c[1] or '0'), tonumber(ARGV[1]))
local served = math.max(tonumber(c[2] or '0'), tonumber(ARGV[2]))
redis.call('HSET', KEYS[1], 'admitted', admitted, 'served', served)
if c[3] ~= '1' then
  local have = {}
  for _, k in ipairs(redis.call('LRANGE', KEYS[2], 0, -1)) do have[k] = true end
  for i = 4, #ARGV do
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
redis.call('EXPIRE', KEYS[1], ARGV[3])
return 1
`

var (
	initScript    = newScript(initLua)
	restoreScript = newScript(restoreLua)
	sealScript    = newScript(sealLua)
)

// Init marks an event's state as initialized, so that it takes admissions,
// if the node holding it is one of epoch (the run ids of the nodes whose
// state was complete at the last rebuild); it reports false otherwise, and
// the state must be rebuilt first. An empty epoch initializes without a
// check (tests, a fresh deployment's first event).
func (q *QueueState) Init(ctx context.Context, eventID boxoffice.ID, epoch []string) (bool, error) {
	ctx, cancel := q.ctx(ctx)
	defer cancel()
	n, err := initScript.exec(ctx, q.client, []string{q.slot(eventID) + "n"}, append([]string{q.ttlSeconds()}, epoch...)).AsInt64()
	if err != nil {
		return false, boxoffice.Unavailable("the queue state", err)
	}
	return n == 1, nil
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
	slot := q.slot(eventID)
	for len(entries) > 0 {
		chunk := entries[:min(len(entries), 200)]
		entries = entries[len(chunk):]
		keys := make([]string, 0, 2*len(chunk))
		args := make([]string, 1, 1+10*len(chunk))
		args[0] = q.ttlSeconds()
		cmds := make(rueidis.Commands, 0, len(chunk)+1)
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
			keys = append(keys, q.entryKey(eventID, r.UserID, r.IdempotencyKey), slot+"live:"+r.UserID)
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
	}
	return nil
}

// Seal ends an event's rebuild: the counters are raised to admitted (the
// highest position in the log) and served (the outcomes on record), the
// requests still waiting for the draw join the pre-queue in the order
// given, and the event takes admissions again (see sealLua).
func (q *QueueState) Seal(ctx context.Context, eventID boxoffice.ID, admitted, served int64, waiting []*boxoffice.QueuedRequest) error {
	ctx, cancel := q.ctx(ctx)
	defer cancel()
	slot := q.slot(eventID)
	args := make([]string, 3, 3+len(waiting))
	args[0], args[1], args[2] = strconv.FormatInt(admitted, 10), strconv.FormatInt(served, 10), q.ttlSeconds()
	for _, r := range waiting {
		args = append(args, q.entryKey(eventID, r.UserID, r.IdempotencyKey))
	}
	if err := sealScript.exec(ctx, q.client, []string{slot + "n", slot + "waiting"}, args).Error(); err != nil {
		return boxoffice.Unavailable("the queue state", err)
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
