package redis

import (
	"context"
	"crypto/sha1"
	"encoding/hex"

	"github.com/redis/rueidis"
)

// The Lua scripts. Each touches only the KEYS it is given, and every caller
// passes keys of one hash tag, so each runs atomically on one node of a
// cluster. Seat values are "<owner>:<fence>"; fences are decimal integers
// below 2^53, so Lua's doubles hold them exactly; string.format('%d') keeps
// them out of Lua's exponent notation.

// acquireLua holds every seat or none. KEYS[1] is the group's fence counter,
// KEYS[2] its index of live holds, KEYS[3..] its seats; ARGV is owner, ttl
// in ms, floor, the owner whose holds are superseded (empty for none), and
// (ARGV[7]) the length of the seat keys' prefix, after which a key is its
// seat's id. A seat is free if it has no value or
// the value is the same owner's or the superseded owner's. The new fence is
// the largest of counter+1, floor and the server clock in microseconds (see
// the package comment). Reply: {1, fence, i, fence_i, expiry_i, who_i, ...},
// listing for each seat i held before by the same owner (who_i 0) or the
// superseded one (who_i 1) its fence and absolute expiry in ms (for
// undoLua); or {0, i...} with the 1-based indexes of the seats held by
// someone else, having written nothing.
//
// With ARGV[5] (a lease token, Holds.AcquireLeased) the key after the
// seats is the lease's and ARGV[6] its ttl in ms: the script replies {-1}
// and writes nothing while the lease exists, and takes it with the grant.
// With ARGV[8] too (HoldRequest.Remember in ms), the last two keys are the
// lease's mark and the section's ledger of marks, and a grant writes the
// mark (see marksLua). A grant enters each seat in the index with its
// expiry (see indexLua).
const acquireLua = marksLua + `
local mine = ARGV[1] .. ':'
local n = #mine
local sup = ''
if ARGV[4] and ARGV[4] ~= '' then sup = ARGV[4] .. ':' end
local nk = #KEYS
local lk, mk, ledger = nil, nil, nil
local remember = ARGV[8]
if remember and remember ~= '' then
  mk, ledger = KEYS[nk - 1], KEYS[nk]
  nk = nk - 2
end
local lease = ARGV[5]
if lease and lease ~= '' then
  lk = KEYS[nk]
  nk = nk - 1
  if redis.call('EXISTS', lk) == 1 then return {-1} end
end
local now = redis.call('TIME')
local nowms = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
local taken = {0}
local reply = {1, 0}
for i = 3, nk do
  local v = redis.call('GET', KEYS[i])
  if v then
    local who, len = -1, 0
    if string.sub(v, 1, n) == mine then
      who, len = 0, n
    elseif sup ~= '' and string.sub(v, 1, #sup) == sup then
      who, len = 1, #sup
    end
    if who < 0 then
      taken[#taken + 1] = i - 2
    else
      local pttl = redis.call('PTTL', KEYS[i])
      local f = tonumber(string.sub(v, len + 1))
      if pttl > 0 and f then
        reply[#reply + 1] = i - 2
        reply[#reply + 1] = f
        reply[#reply + 1] = nowms + pttl
        reply[#reply + 1] = who
      end
    end
  end
end
if #taken > 1 then
  return taken
end
local fence = tonumber(now[1]) * 1000000 + tonumber(now[2])
local last = tonumber(redis.call('GET', KEYS[1]) or '0')
if last + 1 > fence then fence = last + 1 end
local floor = tonumber(ARGV[3])
if floor > fence then fence = floor end
local fs = string.format('%d', fence)
redis.call('SET', KEYS[1], fs)
local value = mine .. fs
local plen = tonumber(ARGV[7])
local expiry = nowms + tonumber(ARGV[2])
local entries = {}
for i = 3, nk do
  redis.call('SET', KEYS[i], value, 'PX', ARGV[2])
  entries[#entries + 1] = expiry
  entries[#entries + 1] = string.sub(KEYS[i], plen + 1)
end
redis.call('ZADD', KEYS[2], unpack(entries))
if redis.call('PTTL', KEYS[2]) < tonumber(ARGV[2]) then redis.call('PEXPIRE', KEYS[2], ARGV[2]) end
if lk then redis.call('SET', lk, lease, 'PX', ARGV[6]) end
if mk then mark(mk, ledger, tonumber(remember), nowms) end
reply[2] = fence
return reply
`

// acquireManyLua decides, in order, a batch of requests whose seats are all
// in one section: each as acquireLua without a floor, seeing the grants of
// the ones before it. KEYS[1] is the section's fence counter, KEYS[2] its
// index of live holds, KEYS[3] its ledger of marks (see marksLua), then the
// seats of each request in turn (repeats within a request dropped), each
// followed by its lease's key if it has one and then its mark's key if it
// has one; ARGV[1] is the length of the seat keys' prefix, then seven per
// request: its number of seats, owner, ttl in ms, superseded owner (empty
// for none), lease token and lease ttl in ms (both empty for none), and
// how long its mark is kept in ms (empty for none; only with a lease).
// Each grant gets its own fence, the largest of counter+1 and the server
// clock in microseconds, so they increase through the batch, and writes
// its mark. Reply: one entry per request, {1, fence} for a grant, {-1}
// while its lease exists (nothing written), or {0, i...} with the 1-based
// indexes (within the request) of the seats held by someone else, the
// request having written nothing; {2, i...} is that refusal of a request
// with a mark that the ledger vouches no grant under its lease had.
const acquireManyLua = marksLua + `
local now = redis.call('TIME')
local clock = tonumber(now[1]) * 1000000 + tonumber(now[2])
local nowms = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
local last = tonumber(redis.call('GET', KEYS[1]) or '0')
local plen = tonumber(ARGV[1])
local granted = false
local longest = 0
local entries = {}
local reply = {}
local k = 3
for a = 2, #ARGV, 7 do
  local n = tonumber(ARGV[a])
  local mine = ARGV[a + 1] .. ':'
  local sup = ''
  if ARGV[a + 3] ~= '' then sup = ARGV[a + 3] .. ':' end
  local lease = ARGV[a + 4]
  local lk, mk = nil, nil
  if lease ~= '' then lk = KEYS[k + n + 1] end
  local remember = tonumber(ARGV[a + 6])
  if lk and remember then mk = KEYS[k + n + 2] end
  if lk and redis.call('EXISTS', lk) == 1 then
    reply[#reply + 1] = {-1}
  else
    local taken = {0}
    for i = 1, n do
      local v = redis.call('GET', KEYS[k + i])
      if v and string.sub(v, 1, #mine) ~= mine and (sup == '' or string.sub(v, 1, #sup) ~= sup) then
        taken[#taken + 1] = i
      end
    end
    if #taken > 1 then
      if mk and vouched(KEYS[3], remember, nowms) and redis.call('EXISTS', mk) == 0 then
        taken[1] = 2
      end
      reply[#reply + 1] = taken
    else
      local fence = last + 1
      if clock > fence then fence = clock end
      last, granted = fence, true
      local value = mine .. string.format('%d', fence)
      local ttl = tonumber(ARGV[a + 2])
      if ttl > longest then longest = ttl end
      for i = 1, n do
        redis.call('SET', KEYS[k + i], value, 'PX', ARGV[a + 2])
        entries[#entries + 1] = nowms + ttl
        entries[#entries + 1] = string.sub(KEYS[k + i], plen + 1)
      end
      if lk then redis.call('SET', lk, lease, 'PX', ARGV[a + 5]) end
      if mk then mark(mk, KEYS[3], remember, nowms) end
      reply[#reply + 1] = {1, fence}
    end
  end
  k = k + n
  if lk then k = k + 1 end
  if mk then k = k + 1 end
end
if granted then
  redis.call('SET', KEYS[1], string.format('%d', last))
  -- In chunks: unpack has a limit on the values it spreads.
  for i = 1, #entries, 1000 do
    redis.call('ZADD', KEYS[2], unpack(entries, i, math.min(i + 999, #entries)))
  end
  if redis.call('PTTL', KEYS[2]) < longest then redis.call('PEXPIRE', KEYS[2], longest) end
end
return reply
`

// marksLua is the marks of leased grants, shared by the acquire scripts.
// A leased grant asked to be remembered (HoldRequest.Remember) sets its
// mark, a key named after its lease, for that long. The section's ledger
// says since when every such grant on this server left its mark, and the
// shortest time any of those marks is kept: "<ms>:<run id>:<least ms>",
// begun by a mark when missing, when its run id is not this server's, or
// when the mark is kept longer than the ledger's least (the marks written
// before, kept less, may run out while the records they stand for remain:
// sale.Config.IdempotencyTTL raised); a mark kept less than the least
// lowers it. The ledger is kept twice as long as the marks after each
// script that marks (a script's marks share one ledger, checked once per
// length). A restart (a new run id, and usually an empty server), a
// failover (the replica's run id differs) or a resharding (another
// node's) can lose marks, and each begins the ledger anew; a refusal is
// vouched for (no grant under its lease within remember ms) only by a
// ledger of this server begun at least remember ms ago, or opened with the
// section (0: OpenMarks, before any hold, least empty until a mark), whose
// marks are all kept at least remember ms. Eviction must be off
// (maxmemory-policy noeviction), as the holds themselves need.
const marksLua = `
local rid = nil
local function runid()
  if not rid then rid = string.match(redis.call('INFO', 'server'), 'run_id:(%x+)') end
  return rid
end
-- The ledger, read once a script: false unread, nil none of this server's.
local led = false
local function ledgerOf(key)
  if led == false then
    led = nil
    local v = redis.call('GET', key)
    if v then
      local s, id, least = string.match(v, '^(%d+):(%x+):(%d*)$')
      if s and id == runid() then led = {since = tonumber(s), least = tonumber(least)} end
    end
  end
  return led
end
local function writeLedger(key, since, least, keep)
  local v = string.format('%d', since) .. ':' .. runid() .. ':' .. string.format('%d', least)
  local ttl = redis.call('PTTL', key)
  if ttl < keep then ttl = keep end -- an opened ledger may be kept longer
  redis.call('SET', key, v, 'PX', ttl)
  led = {since = since, least = least}
end
local keptFor = nil
local function mark(key, ledger, remember, nowms)
  redis.call('SET', key, '1', 'PX', remember)
  if keptFor == remember then return end
  keptFor = remember
  local keep = 2 * remember -- to vouch after a whole remember without marks
  local l = ledgerOf(ledger)
  if not l or (l.least and remember > l.least) then
    writeLedger(ledger, nowms, remember, keep)
  elseif not l.least or remember < l.least then
    writeLedger(ledger, l.since, remember, keep)
  elseif redis.call('PTTL', ledger) < keep then
    redis.call('PEXPIRE', ledger, keep)
  end
end
-- vouched: whether the ledger says every grant of the last remember ms
-- left a mark that is still there.
local function vouched(ledger, remember, nowms)
  local l = ledgerOf(ledger)
  return l ~= nil and l.since <= nowms - remember and (not l.least or l.least >= remember)
end
`

// openMarksLua opens the ledgers of marks KEYS (see marksLua) of a new
// event's sections as complete from the start, unless they exist: "0:<run
// id>:" (no mark yet, so no least) for ARGV[1] ms. Reply: 0.
const openMarksLua = marksLua + `
for i = 1, #KEYS do
  redis.call('SET', KEYS[i], '0:' .. runid() .. ':', 'NX', 'PX', ARGV[1])
end
return 0
`

// promoteLua moves one group of a cross-section hold from the fence it got
// in acquireLua (ARGV[2]) to the hold's final fence (ARGV[3]), keeping each
// seat's expiry, and raises the group's counter to at least the final fence.
// KEYS as for acquireLua, ARGV[1] the owner. Running it twice is harmless.
// Reply: {1} or {0, i...} with the seats no longer held under either fence
// (expired, or taken over meanwhile), in which case nothing is written.
const promoteLua = `
local old = ARGV[1] .. ':' .. ARGV[2]
local new = ARGV[1] .. ':' .. ARGV[3]
local lost = {0}
for i = 2, #KEYS do
  local v = redis.call('GET', KEYS[i])
  if v ~= old and v ~= new then
    lost[#lost + 1] = i - 1
  end
end
if #lost > 1 then
  return lost
end
local last = tonumber(redis.call('GET', KEYS[1]) or '0')
if tonumber(ARGV[3]) > last then
  redis.call('SET', KEYS[1], ARGV[3])
end
for i = 2, #KEYS do
  redis.call('SET', KEYS[i], new, 'KEEPTTL')
end
return {1}
`

// releaseLua deletes the seats in KEYS[2..] whose value belongs to the
// owner ARGV[1], and their entries in the index KEYS[1]; ARGV[2] is the
// length of the seat keys' prefix. Reply: how many keys it deleted.
const releaseLua = `
local mine = ARGV[1] .. ':'
local n = #mine
local plen = tonumber(ARGV[2])
local freed = 0
for i = 2, #KEYS do
  local v = redis.call('GET', KEYS[i])
  if v and string.sub(v, 1, n) == mine then
    freed = freed + redis.call('DEL', KEYS[i])
    redis.call('ZREM', KEYS[1], string.sub(KEYS[i], plen + 1))
  end
end
return freed
`

// undoLua gives back the seats of one section of a failed cross-section
// Acquire. KEYS[1] is the section's index of live holds, KEYS[2..] the
// seats; ARGV[1] is the value that Acquire wrote ("<owner>:<fence>"): only
// seats still holding exactly it are touched, so a newer hold, even by the
// same owner, survives. ARGV[2] = 'prefix' makes ARGV[1] an owner prefix
// "<owner>:" instead, for a section where the outcome of the acquire
// script is unknown. ARGV[3] is the length of the seat keys' prefix.
// ARGV[3+i] and ARGV[3+n+i] (n seats) are the value seat i had before and
// its absolute expiry in ms (empty if it was free): such seats get their
// earlier hold back, the others are deleted; the index follows. Reply: 0.
const undoLua = `
local want = ARGV[1]
local prefix = ARGV[2] == 'prefix'
local plen = tonumber(ARGV[3])
local n = #KEYS - 1
for i = 1, n do
  local key = KEYS[1 + i]
  local v = redis.call('GET', key)
  if v and (v == want or (prefix and string.sub(v, 1, #want) == want)) then
    local old = ARGV[3 + i]
    if old and old ~= '' then
      redis.call('SET', key, old, 'PXAT', ARGV[3 + n + i])
      redis.call('ZADD', KEYS[1], ARGV[3 + n + i], string.sub(key, plen + 1))
    else
      redis.call('DEL', key)
      redis.call('ZREM', KEYS[1], string.sub(key, plen + 1))
    end
  end
end
return 0
`

// leaseReleaseLua deletes each KEYS[i] that still holds the token
// ARGV[i]. Reply: how many it deleted.
const leaseReleaseLua = `
local n = 0
for i = 1, #KEYS do
  if redis.call('GET', KEYS[i]) == ARGV[i] then
    n = n + redis.call('DEL', KEYS[i])
  end
end
return n
`

var (
	acquireScript      = newScript(acquireLua)
	acquireManyScript  = newScript(acquireManyLua)
	promoteScript      = newScript(promoteLua)
	releaseScript      = newScript(releaseLua)
	undoScript         = newScript(undoLua)
	leaseReleaseScript = newScript(leaseReleaseLua)
	openMarksScript    = newScript(openMarksLua)
)

// script runs one Lua script by EVALSHA, falling back to EVAL (which also
// loads it) when the node answers NOSCRIPT: after a restart, a SCRIPT FLUSH,
// or on a cluster node that has not seen it yet.
type script struct {
	lua *rueidis.Lua
	src string
	sha string
}

func newScript(src string) *script {
	sum := sha1.Sum([]byte(src))
	return &script{lua: rueidis.NewLuaScript(src), src: src, sha: hex.EncodeToString(sum[:])}
}

// exec runs the script once (rueidis.Lua does the NOSCRIPT fallback).
func (s *script) exec(ctx context.Context, c rueidis.Client, keys, args []string) rueidis.RedisResult {
	return s.lua.Exec(ctx, c, keys, args)
}

// execMulti runs the script once per exec in one pipelined DoMulti (the
// cluster client sends each to its slot's node, in parallel), then runs again
// by EVAL only those that met NOSCRIPT. Unlike rueidis.Lua.ExecMulti it does
// not SCRIPT LOAD on every node at each call.
func (s *script) execMulti(ctx context.Context, c rueidis.Client, execs []rueidis.LuaExec) []rueidis.RedisResult {
	if len(execs) == 1 {
		return []rueidis.RedisResult{s.exec(ctx, c, execs[0].Keys, execs[0].Args)}
	}
	cmds := make(rueidis.Commands, len(execs))
	for i, e := range execs {
		cmds[i] = c.B().Evalsha().Sha1(s.sha).Numkeys(int64(len(e.Keys))).Key(e.Keys...).Arg(e.Args...).Build()
	}
	res := c.DoMulti(ctx, cmds...)
	var again []int
	for i, r := range res {
		if e, ok := rueidis.IsRedisErr(r.Error()); ok && e.IsNoScript() {
			again = append(again, i)
		}
	}
	if len(again) == 0 {
		return res
	}
	cmds = make(rueidis.Commands, len(again))
	for j, i := range again {
		cmds[j] = s.eval(c, execs[i])
	}
	for j, r := range c.DoMulti(ctx, cmds...) {
		res[again[j]] = r
	}
	return res
}

// evalMulti is execMulti by EVAL, which sends the source every time but
// cannot meet NOSCRIPT: for execs that must run in slice order on their
// node. execMulti's second round would run the ones that met NOSCRIPT after
// later ones that did not (another client's EVAL can load the script in
// between).
func (s *script) evalMulti(ctx context.Context, c rueidis.Client, execs []rueidis.LuaExec) []rueidis.RedisResult {
	cmds := make(rueidis.Commands, len(execs))
	for i, e := range execs {
		cmds[i] = s.eval(c, e)
	}
	return c.DoMulti(ctx, cmds...)
}

func (s *script) eval(c rueidis.Client, e rueidis.LuaExec) rueidis.Completed {
	return c.B().Eval().Script(s.src).Numkeys(int64(len(e.Keys))).Key(e.Keys...).Arg(e.Args...).Build()
}
