// Package redis implements the lock-layer ports boxoffice.Holds and
// boxoffice.Leases on Redis and Redis Cluster, with rueidis.
//
// # Keys
//
//	<prefix>seat:{<event>:<section>}:<seat>  "<owner>:<fence>", expiring with the hold (PX)
//	<prefix>fence:{<event>:<section>}        the section's fence counter (no expiry)
//	<prefix>held:{<event>:<section>}         the section's index of live holds: a sorted
//	                                         set of seat ids by expiry (ms), expiring
//	                                         with the last of them
//	<prefix>lease:<key>                      a lease's random token, expiring with it (PX)
//	<prefix>lease:{<event>:<section>}:<key>  the same, of a lease taken with a hold (AcquireLeased)
//	<prefix>granted:{<event>:<section>}:<h>  the mark of a grant under a lease whose key hashes to h
//	                                         (HoldRequest.Remember), expiring after Remember
//	<prefix>granted:{<event>:<section>}      the section's ledger of those marks: since when they
//	                                         are complete, on which server (see Marks)
//
// The hash tag {<event>:<section>} puts all the seats of a section and its
// fence counter in one hash slot. A hot event therefore spreads over the
// shards of a cluster section by section, while a hold within one section
// (the usual case: adjacent seats) is one script on one node: one round
// trip, atomic. Every multi-key command here stays inside one hash tag;
// rueidis refuses anything else, even on a single server.
//
// # Fences
//
// The port promises that a later hold on a seat carries a larger fence than
// every earlier one; that is what the Store's fencing check compares, and it
// only ever compares holds that share a seat. One counter per event cannot
// give that on a cluster: it would live in one slot, and a script cannot
// touch it and the seats of another slot. So there is one counter per
// (event, section), and the acquire script sets the fence of a section to
//
//	fence = max(counter+1, floor, server clock in µs)   and then counter = fence
//
// and writes "<owner>:<fence>" into each seat. The invariant: every fence
// ever written into a seat of a section is at most that section's counter
// when it is written. The next acquire in the section exceeds the counter,
// so it exceeds every earlier fence on each of its seats, whatever the clock
// does. The clock term (Redis TIME, microseconds since 1970: about 2^51, so
// exact in Lua's doubles and in JSON) does two more things: fences keep
// growing when a counter is lost (a restart without persistence, a failover
// to a replica that missed the last increments, an evicted key), and fences
// of different sections of an event are ordered like the holds in time, as
// far as the servers' clocks agree. Only the per-seat order is guaranteed.
//
// # Holds over several sections
//
// A hold whose seats span sections spans slots, so it cannot be one script.
// Acquire makes it all-or-nothing on the client side:
//
//  1. Sections in sorted order, one acquire script each, one after the
//     other, each given the previous section's fence as its floor; so the
//     last fence F is the largest. The sorted order means two requests
//     racing for the same sections meet at the first one they share, and one
//     of them wins, instead of each taking half and both failing.
//  2. Every section whose fence is below F gets a promote script, all in one
//     pipelined DoMulti: it rewrites the seats to "<owner>:F" (keeping their
//     expiry) and raises the counter to at least F, which restores the
//     invariant above. The hold's fence is F.
//  3. If a section is taken at step 1, the sections already held are given
//     back (undoLua): a seat still holding exactly "<owner>:<its fence>"
//     gets back the earlier hold it replaced, the same owner's or the
//     superseded owner's (value and expiry, as the acquire script reported
//     them), or is deleted; any
//     other value, a newer hold, is left alone. So a failed retry leaves
//     the owner's earlier hold as it was. The remaining sections are read
//     to report every seat in the way, and Acquire returns ESEATTAKEN. If a seat was lost between steps 1 and 2 (possible only
//     with a TTL shorter than the Acquire itself) all is given back and
//     Acquire returns ESEATTAKEN. On a store error it gives back what it
//     holds or may hold (in the section whose script may or may not have
//     run, every seat of the request the owner holds) and returns
//     EUNAVAILABLE.
//
// The cost: k sections take k sequential round trips plus one pipelined
// round trip (two more on a conflict), against one for a single section;
// on a cluster each may go to another node. It is not atomic across slots:
// while it runs, others can see part of the seats held (Held, or a
// conflicting Acquire that fails although this one fails too), and if the
// process dies between the steps nobody compensates, so the part already
// taken stays held until its TTL runs out. That is the one way a request
// leaves part of its seats held, bounded by the TTL; no booking was made
// for it, so nothing can be confirmed or sold on it.
//
// # Batches
//
// AcquireMany decides a batch as if Acquire were called for each request in
// turn. Requests within one section, the usual case, are grouped by
// section: one acquireMany script per section walks that section's requests
// in batch order, each all or nothing and each grant under a fence of its
// own as above, so a request sees the seats the earlier ones took. The
// scripts of all sections go in one pipelined DoMulti: one round trip for
// the batch (on a cluster, one per node, in parallel). A section with more
// than batchChunk requests (or mgetChunk seats) gets several scripts, which
// must run in order. They do: rueidis writes a DoMulti's commands for one
// node on one connection, in their order (on a cluster it splits a DoMulti
// by node and keeps the order), and they go by EVAL, so that no NOSCRIPT
// retry can run one after a later one.
//
// Concurrent AcquireLeased calls (the direct reserve) batch the same way: a
// call of one section that supersedes nobody joins the next batch of a
// combine.Combiner (up to leasedRunners batches at once), decided as
// AcquireMany decides a wave, each request checking and taking its lease
// in its section's script. A flash sale's reserves, most of them refused,
// then cost Redis one script call per section per batch instead of one
// per request. A call over several sections, or superseding an owner,
// runs alone as before.
//
// A request over several sections cannot be one script. It ends a wave: the
// single-section requests before it are decided first, then it is taken by
// Acquire, then the requests after it form the next wave; so k such
// requests cost k more round trips besides their own Acquires. If a
// section's script fails, its requests are EUNAVAILABLE; the script may
// have run, so they may hold their seats until their TTL runs out.
//
// # Marks
//
// A refused direct reserve would read the database to learn whether its
// idempotency key was answered before: the retry of a request that got a
// booking finds its seats held, by its own first hold or, once that ran
// out, by someone else. Under a flash sale nearly every reserve is refused,
// and that read was most of what it cost. So a leased grant asked to be
// remembered (HoldRequest.Remember, as long as the idempotency records
// last) leaves a mark named after its lease key in its first section's
// slot, in the same script, and a refusal in a single section's batch
// whose mark is missing says so (boxoffice.ErrNeverGranted) when the
// section's ledger vouches that no mark can have been lost: the ledger
// holds the server's run id, the time from which it holds and the
// shortest Remember of its marks, and is begun anew whenever a restart,
// failover or resharding puts the slot on a server with another run id,
// or a mark is kept longer than that shortest. A ledger begun anew
// vouches only after Remember has passed; one opened with a new event
// (OpenMarks) at once; none for a refusal asking a longer Remember than
// its marks are kept.
// Marks cost about 100 bytes of Redis memory a grant for Remember; a
// refusal's check is an EXISTS, and a script that needs the ledger reads
// the server's run id once (INFO server, about 1.5 us).
//
// # The index of live holds
//
// Every script that writes or deletes a seat does the same to its entry in
// the section's index (score: the hold's expiry by the server's clock), in
// the same atomic call. A seat map reads every seat of an event, most of
// them free, once a second while a sale is on; reading them by key cost
// the server about 2 us a seat (a 70,000-seat event: 70 MGETs, 130 ms of a
// busy Redis's CPU). Held reads a section's index instead when asked for
// many of its seats: one ZRANGEBYSCORE from now, whose cost follows the
// holds that are live, not the seats. An entry whose hold ran out stays
// until the seat is held again (at most one per seat); the index expires
// with its last live hold. While nodes of a version before the index still
// run, their holds are missing from it (a seat map shows them free until
// they run out) and their releases stay in it (shown held until the hold
// would have run out); the lock decides anyway.
//
// # Reads and failures
//
// Verify reads with MGET per section (in chunks of mgetChunk keys), and Held
// with MGET or the index, all in one pipelined DoMulti: one round trip
// whatever the number of seats (on a cluster, one per node, in parallel).
// Every call is bounded by Timeout; any Redis or network error is returned
// as EUNAVAILABLE (fail closed), and rueidis reconnects by itself when the
// server is back. The scripts run by EVALSHA and fall back to EVAL on
// NOSCRIPT, so a restarted server or a SCRIPT FLUSH costs one extra round
// trip. They need Redis 6.2 or later (SET ... PXAT, KEEPTTL, TIME before
// writes in a script).
package redis

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/internal/combine"
	"github.com/redis/rueidis"
)

// DefaultTimeout bounds each call to the lock store when Holds.Timeout or
// Leases.Timeout is zero.
const DefaultTimeout = 2 * time.Second

// mgetChunk is the most keys one MGET reads, so that a 70,000-seat read does
// not stall the server on one command.
const mgetChunk = 1000

// batchChunk is the most requests one acquireMany script decides, and
// mgetChunk the most seats (unless one request has more), for the same
// reason.
const batchChunk = 500

var _ boxoffice.Holds = (*Holds)(nil)

// Holds is boxoffice.Holds on Redis or Redis Cluster (see the package
// comment for the keys, the fences and what a hold over several sections
// costs). It is safe for concurrent use.
type Holds struct {
	client rueidis.Client
	prefix string

	// Timeout bounds each method's work against Redis, retries included;
	// zero means DefaultTimeout. Giving back the seats of a failed
	// cross-section Acquire takes at most one more Timeout.
	Timeout time.Duration

	// leased batches the concurrent AcquireLeased calls of one section
	// each (see Batches).
	leased *combine.Combiner[leasedAcquire, leasedGrant]
}

// NewHolds returns Holds storing its keys under prefix (such as
// "boxoffice:"), which must not contain '{' or '}': they would change the
// hash tags. It panics if it does.
func NewHolds(client rueidis.Client, prefix string) *Holds {
	checkPrefix(prefix)
	h := &Holds{client: client, prefix: prefix}
	h.leased = combine.New(h.acquireLeasedBatch, leasedRunners, batchChunk)
	return h
}

// leasedRunners is how many batches of AcquireLeased calls run at once:
// while one waits for Redis the next is being gathered.
const leasedRunners = 4

func checkPrefix(prefix string) {
	if strings.ContainsAny(prefix, "{}") {
		panic("redis: key prefix " + strconv.Quote(prefix) + " contains '{' or '}'")
	}
}

// group is the seats of one request that share a section, hence a hash slot.
type group struct {
	section string
	seats   []string // seat ids, in request order
	keys    []string // their keys, aligned with seats
	pos     []int    // the index of each seat in the request
	counter string   // the section's fence counter key
	index   string   // the section's index of live holds
	tag     string   // the section's hash tag, {<event>:<section>}
	ledger  string   // the section's ledger of marks (see Marks)
	prefix  string   // its seat keys' prefix: a key is prefix + seat id
	plen    string   // len(prefix), for the scripts
}

// groups splits seatIDs by section, sorted by section name, with their keys.
// With distinct it drops repeated seat ids.
func (h *Holds) groups(eventID boxoffice.ID, seatIDs []string, distinct bool) []*group {
	groups := h.sections(eventID, seatIDs, distinct)
	for _, g := range groups {
		g.seatKeys()
	}
	return groups
}

// seatKeys returns g's seat keys, aligned with its seats, building them on
// first use: a seat map's read from the index of live holds needs none, and
// building 70,000 of them a second was most of what the inventory allocated.
func (g *group) seatKeys() []string {
	if g.keys == nil {
		g.keys = make([]string, len(g.seats))
		for i, id := range g.seats {
			g.keys[i] = g.prefix + id
		}
	}
	return g.keys
}

// sections is groups without the seat keys.
func (h *Holds) sections(eventID boxoffice.ID, seatIDs []string, distinct bool) []*group {
	ev := eventID.String()
	by := make(map[string]*group)
	var seen map[string]bool
	if distinct {
		seen = make(map[string]bool, len(seatIDs))
	}
	var out []*group
	for i, id := range seatIDs {
		if distinct {
			if seen[id] {
				continue
			}
			seen[id] = true
		}
		sec := boxoffice.SectionOf(id)
		g := by[sec]
		if g == nil {
			g = h.section(ev, sec)
			by[sec] = g
			out = append(out, g)
		}
		g.seats = append(g.seats, id)
		g.pos = append(g.pos, i)
	}
	slices.SortFunc(out, func(a, b *group) int { return cmp.Compare(a.section, b.section) })
	return out
}

// section is the group of section sec of event ev, without seats.
func (h *Holds) section(ev, sec string) *group {
	tag := "{" + ev + ":" + sec + "}"
	g := &group{section: sec, tag: tag, counter: h.prefix + "fence:" + tag, index: h.prefix + "held:" + tag,
		ledger: h.prefix + "granted:" + tag, prefix: h.prefix + "seat:" + tag + ":"}
	g.plen = strconv.Itoa(len(g.prefix))
	return g
}

func (h *Holds) timeout() time.Duration {
	if h.Timeout > 0 {
		return h.Timeout
	}
	return DefaultTimeout
}

// validRequest is Acquire's check of a request: EINVALID or nil.
func validRequest(req boxoffice.HoldRequest) error {
	if err := req.Check(); err != nil {
		return err
	}
	return validSeats(req.SeatIDs) // a seat id names its section, hence its slot
}

func validSeats(seatIDs []string) error {
	if len(seatIDs) == 0 {
		return boxoffice.Errorf(boxoffice.EINVALID, "no seats given")
	}
	for _, id := range seatIDs {
		if boxoffice.SectionOf(id) == "" {
			return boxoffice.Errorf(boxoffice.EINVALID, "invalid seat id %q", id)
		}
	}
	return nil
}

// millis is d in whole milliseconds, rounded up so a positive TTL never
// becomes PX 0.
func millis(d time.Duration) string {
	return strconv.FormatInt(int64((d+time.Millisecond-1)/time.Millisecond), 10)
}

func fenceValue(owner string, fence int64) string {
	return owner + ":" + strconv.FormatInt(fence, 10)
}

// Acquire holds every seat of req for req.TTL, or none (see the package
// comment for holds over several sections). It returns EINVALID for a
// request without seats, with a seat id that has no section, or with a TTL
// that is not positive; ESEATTAKEN listing the seats held by other owners;
// EUNAVAILABLE when Redis fails or does not answer within Timeout.
func (h *Holds) Acquire(ctx context.Context, req boxoffice.HoldRequest) (boxoffice.Hold, error) {
	return h.acquire(ctx, req, nil)
}

var _ boxoffice.LeasedHolds = (*Holds)(nil)

// AcquireLeased is Acquire taking the lease on key for ttl in the first
// section's script (see boxoffice.LeasedHolds): the lease is the key
// <prefix>lease:{<event>:<section>}:<key> of that section's slot, holding
// a random token, and release is the check-and-delete of Leases. A lease
// taken by the first section's script of a hold over several sections is
// given back with the seats when a later section refuses.
func (h *Holds) AcquireLeased(ctx context.Context, req boxoffice.HoldRequest, key string, ttl time.Duration) (boxoffice.Hold, func(), error) {
	none := func() {}
	if key == "" || ttl <= 0 {
		return boxoffice.Hold{}, none, boxoffice.Errorf(boxoffice.EINVALID, "a lease needs a key and a positive ttl")
	}
	raw := make([]byte, 16)
	_, _ = rand.Read(raw) // crypto/rand.Read never fails
	l := &lease{name: key, token: hex.EncodeToString(raw), ttl: millis(ttl)}
	if err := validRequest(req); err != nil {
		return boxoffice.Hold{}, none, err
	}
	var hold boxoffice.Hold
	var err error
	if groups := h.groups(req.EventID, req.SeatIDs, true); len(groups) == 1 && req.Supersede == 0 {
		// The usual case: concurrent calls share one script per section.
		g := groups[0]
		l.place(h, g, req.Remember)
		var res leasedGrant
		if res, err = h.leased.Call(ctx, leasedAcquire{req: req, g: g, lease: l}); err != nil {
			err = boxoffice.Unavailable("the seat hold store", err) // the caller's context ended first
		} else {
			hold, err = res.hold, res.err
		}
		if boxoffice.ErrorCode(err) == boxoffice.EUNAVAILABLE {
			h.endLease(ctx, l) // the script may have taken it
		}
	} else {
		hold, err = h.acquireGroups(ctx, req, groups, l)
	}
	if err != nil {
		return boxoffice.Hold{}, none, err
	}
	var once sync.Once
	return hold, func() { once.Do(func() { h.endLease(ctx, l) }) }, nil
}

// place puts l in the slot of the section g, the request's first: its key
// and, when the grant is to be remembered that long, its mark's.
func (l *lease) place(h *Holds, g *group, remember time.Duration) {
	l.key = h.prefix + "lease:" + g.tag + ":" + l.name
	l.mark, l.remember = "", ""
	if remember > 0 {
		// Hashed: a mark's key stays short whatever the lease's name.
		sum := sha256.Sum256([]byte(l.name))
		l.mark = g.ledger + ":" + base64.RawURLEncoding.EncodeToString(sum[:12])
		l.remember = millis(remember)
	}
}

// OpenMarks opens the ledgers of marks of a new event's sections (see
// Marks): each section's refusals are vouched for from the start, for
// keep, unless a ledger is there already. One script per section's slot,
// in one round trip.
func (h *Holds) OpenMarks(ctx context.Context, eventID boxoffice.ID, sections []string, keep time.Duration) error {
	if len(sections) == 0 || keep <= 0 {
		return nil
	}
	ev := eventID.String()
	execs := make([]rueidis.LuaExec, len(sections))
	for i, sec := range sections {
		execs[i] = rueidis.LuaExec{Keys: []string{h.section(ev, sec).ledger}, Args: []string{millis(keep)}}
	}
	ctx, cancel := context.WithTimeout(ctx, h.timeout())
	defer cancel()
	for _, r := range openMarksScript.execMulti(ctx, h.client, execs) {
		if err := r.Error(); err != nil {
			return boxoffice.Unavailable("the seat hold store", err)
		}
	}
	return nil
}

// leasedAcquire is an AcquireLeased call of one section; leasedGrant its
// answer.
type leasedAcquire struct {
	req   boxoffice.HoldRequest
	g     *group
	lease *lease
}

type leasedGrant struct {
	hold boxoffice.Hold
	err  error
}

// acquireLeasedBatch decides a batch of AcquireLeased calls as
// AcquireMany does, in their order, each taking its lease with its seats.
func (h *Holds) acquireLeasedBatch(ctx context.Context, in []leasedAcquire) ([]leasedGrant, error) {
	reqs := make([]boxoffice.HoldRequest, len(in))
	wave := make([]batched, len(in))
	for i, a := range in {
		reqs[i], wave[i] = a.req, batched{i: i, g: a.g, lease: a.lease}
	}
	holds, errs := make([]boxoffice.Hold, len(in)), make([]error, len(in))
	ctx, cancel := context.WithTimeout(ctx, h.timeout())
	defer cancel()
	h.acquireWave(ctx, reqs, wave, holds, errs)
	out := make([]leasedGrant, len(in))
	for i := range in {
		out[i] = leasedGrant{hold: holds[i], err: errs[i]}
	}
	return out, nil
}

func errLeaseInFlight() error {
	return boxoffice.Errorf(boxoffice.EIDEMINFLIGHT, "a request with this key is in flight")
}

// lease is an AcquireLeased's lease: the caller's name for it, its token
// and ttl in ms, and its Redis key (place sets it, in the first section's
// slot); with its mark's key (in that section's slot, beside its ledger)
// and how long the mark is kept in ms, when the request asks for one.
type lease struct{ name, token, ttl, key, mark, remember string }

// endLease deletes l if it still holds its token; if Redis cannot be
// reached, the lease ends with its ttl.
func (h *Holds) endLease(ctx context.Context, l *lease) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), h.timeout())
	defer cancel()
	leaseReleaseScript.exec(ctx, h.client, []string{l.key}, []string{l.token})
}

// acquire is Acquire, also taking l (when not nil) in the first section's
// script.
func (h *Holds) acquire(ctx context.Context, req boxoffice.HoldRequest, l *lease) (boxoffice.Hold, error) {
	if err := validRequest(req); err != nil {
		return boxoffice.Hold{}, err
	}
	return h.acquireGroups(ctx, req, h.groups(req.EventID, req.SeatIDs, true), l)
}

// acquireGroups is acquire of a valid request, its seats in groups.
func (h *Holds) acquireGroups(ctx context.Context, req boxoffice.HoldRequest, groups []*group, l *lease) (boxoffice.Hold, error) {
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, h.timeout())
	defer cancel()

	if l != nil {
		l.place(h, groups[0], req.Remember)
	}
	owner := req.Owner.String()
	supersede := superseded(req)
	ttl := millis(req.TTL)
	expires := time.Now().Add(req.TTL)

	grants := make([]grant, 0, len(groups))
	var fence int64
	for i, g := range groups {
		keys := append([]string{g.counter, g.index}, g.keys...)
		args := []string{owner, ttl, strconv.FormatInt(fence, 10), supersede, "", "", g.plen}
		if l != nil && i == 0 {
			keys, args[4], args[5] = append(keys, l.key), l.token, l.ttl
			if l.mark != "" {
				keys, args = append(keys, l.mark, g.ledger), append(args, l.remember) // g is the lease's section
			}
		}
		reply, err := acquireScript.exec(ctx, h.client, keys, args).AsIntSlice()
		if err == nil && len(reply) == 0 {
			err = errBadReply
		}
		if err == nil && reply[0] == -1 && l != nil && i == 0 {
			return boxoffice.Hold{}, errLeaseInFlight()
		}
		if err == nil && reply[0] == 0 {
			h.giveBack(parent, undoGrants(owner, grants, 0))
			if l != nil && i > 0 {
				h.endLease(parent, l) // taken by the first section's script
			}
			taken := make(map[string]bool)
			g.mark(reply[1:], taken)
			h.takenIn(ctx, owner, supersede, groups[i+1:], taken)
			return boxoffice.Hold{}, seatsTaken(req.SeatIDs, taken, "")
		}
		var gr grant
		if err == nil {
			gr, err = parseGrant(g, reply, owner, supersede)
		}
		if err != nil {
			if len(groups) > 1 {
				// The script may have run in this section: give it back too.
				back := undoGrants(owner, grants, 0)
				h.giveBack(parent, append(back, undo{g: g, want: owner + ":", prefix: true}))
			}
			if l != nil {
				h.endLease(parent, l) // the first script may have taken it
			}
			return boxoffice.Hold{}, boxoffice.Unavailable("the seat hold store", err)
		}
		grants = append(grants, gr)
		fence = gr.fence
	}

	if len(grants) > 1 {
		if err := h.promote(ctx, parent, owner, grants, fence); err != nil {
			if l != nil {
				h.endLease(parent, l)
			}
			return boxoffice.Hold{}, err
		}
	}
	return granted(req, fence, expires), nil
}

// superseded is the script argument for req.Supersede: "" for none.
func superseded(req boxoffice.HoldRequest) string {
	if req.Supersede == 0 {
		return ""
	}
	return req.Supersede.String()
}

func granted(req boxoffice.HoldRequest, fence int64, expires time.Time) boxoffice.Hold {
	return boxoffice.Hold{
		EventID:   req.EventID,
		SeatIDs:   slices.Clone(req.SeatIDs),
		Owner:     req.Owner,
		Fence:     fence,
		ExpiresAt: expires,
	}
}

// mark adds to seats the seats of g at the 1-based indexes idx of a script
// reply.
func (g *group) mark(idx []int64, seats map[string]bool) {
	for _, j := range idx {
		if j >= 1 && int(j) <= len(g.seats) {
			seats[g.seats[j-1]] = true
		}
	}
}

// AcquireMany decides reqs as if Acquire were called for each in turn, in
// one round trip for the requests within one section each (see Batches in
// the package comment). The whole batch is bounded by Timeout, plus one
// more if a hold over several sections has to be given back.
func (h *Holds) AcquireMany(ctx context.Context, reqs []boxoffice.HoldRequest) ([]boxoffice.Hold, []error) {
	holds := make([]boxoffice.Hold, len(reqs))
	errs := make([]error, len(reqs))
	ctx, cancel := context.WithTimeout(ctx, h.timeout())
	defer cancel()
	var wave []batched
	for i, req := range reqs {
		if errs[i] = validRequest(req); errs[i] != nil {
			continue
		}
		groups := h.groups(req.EventID, req.SeatIDs, true)
		if len(groups) > 1 {
			h.acquireWave(ctx, reqs, wave, holds, errs)
			wave = wave[:0]
			if err := ctx.Err(); err != nil {
				// Acquire would only spend a Timeout giving back what it
				// could not take.
				errs[i] = boxoffice.Unavailable("the seat hold store", err)
				continue
			}
			holds[i], errs[i] = h.Acquire(ctx, req)
			continue
		}
		wave = append(wave, batched{i: i, g: groups[0]})
	}
	h.acquireWave(ctx, reqs, wave, holds, errs)
	return holds, errs
}

// batched is a request of a batch within one section: reqs[i], seats g,
// and the lease it takes with them (AcquireLeased), if any.
type batched struct {
	i     int
	g     *group
	lease *lease
}

// acquireWave decides the requests of wave, each within one section, in
// order: one acquireMany script per section and chunk, all in one DoMulti.
// It sets their holds and errs.
func (h *Holds) acquireWave(ctx context.Context, reqs []boxoffice.HoldRequest, wave []batched, holds []boxoffice.Hold, errs []error) {
	if len(wave) == 0 {
		return
	}
	bySlot := make(map[string][]batched)
	var slots []string
	for _, b := range wave {
		if _, ok := bySlot[b.g.counter]; !ok {
			slots = append(slots, b.g.counter)
		}
		bySlot[b.g.counter] = append(bySlot[b.g.counter], b)
	}
	var calls [][]batched
	chunked := false
	for _, slot := range slots {
		all := bySlot[slot]
		from, seats := 0, 0
		for j, b := range all {
			if j > from && (j-from == batchChunk || seats+len(b.g.keys) > mgetChunk) {
				calls = append(calls, all[from:j])
				from, seats, chunked = j, 0, true
			}
			seats += len(b.g.keys)
			if b.lease != nil {
				seats++
			}
		}
		calls = append(calls, all[from:])
	}

	execs := make([]rueidis.LuaExec, len(calls))
	for c, call := range calls {
		keys := []string{call[0].g.counter, call[0].g.index, call[0].g.ledger}
		args := make([]string, 1, 1+7*len(call))
		args[0] = call[0].g.plen
		for _, b := range call {
			req := reqs[b.i]
			keys = append(keys, b.g.keys...)
			args = append(args, strconv.Itoa(len(b.g.keys)), req.Owner.String(), millis(req.TTL), superseded(req))
			switch l := b.lease; {
			case l == nil:
				args = append(args, "", "", "")
			case l.mark == "":
				keys, args = append(keys, l.key), append(args, l.token, l.ttl, "")
			default:
				keys, args = append(keys, l.key, l.mark), append(args, l.token, l.ttl, l.remember)
			}
		}
		execs[c] = rueidis.LuaExec{Keys: keys, Args: args}
	}
	run := acquireManyScript.execMulti
	if chunked {
		// A slot's scripts must run in order (see Batches).
		run = acquireManyScript.evalMulti
	}
	now := time.Now()
	for c, r := range run(ctx, h.client, execs) {
		replies, err := parseMany(r, len(calls[c]))
		for j, b := range calls[c] {
			req := reqs[b.i]
			switch {
			case err != nil:
				errs[b.i] = boxoffice.Unavailable("the seat hold store", err)
			case replies[j][0] == 1:
				holds[b.i] = granted(req, replies[j][1], now.Add(req.TTL))
			case replies[j][0] == -1:
				errs[b.i] = errLeaseInFlight()
			default:
				taken := make(map[string]bool)
				b.g.mark(replies[j][1:], taken)
				e := seatsTaken(req.SeatIDs, taken, "")
				if replies[j][0] == 2 {
					e.Err = boxoffice.ErrNeverGranted
				}
				errs[b.i] = e
			}
		}
	}
}

// parseMany checks an acquireMany reply for n requests: {1, fence}, {-1},
// {0, i...} or {2, i...} each.
func parseMany(r rueidis.RedisResult, n int) ([][]int64, error) {
	msgs, err := r.ToArray()
	if err != nil {
		return nil, err
	}
	if len(msgs) != n {
		return nil, errBadReply
	}
	out := make([][]int64, n)
	for i := range msgs {
		reply, err := msgs[i].AsIntSlice()
		if err != nil {
			return nil, err
		}
		if !(len(reply) == 2 && reply[0] == 1 || len(reply) == 1 && reply[0] == -1 || len(reply) >= 2 && (reply[0] == 0 || reply[0] == 2)) {
			return nil, errBadReply
		}
		out[i] = reply
	}
	return out, nil
}

// grant is what the acquire script did in one section: the fence it gave,
// and the holds it replaced (the same owner's, or the superseded owner's).
type grant struct {
	g     *group
	fence int64
	prev  []prior
}

// prior is a seat's earlier hold: g.seats[i] held with value (owner:fence),
// expiring at the Unix time in ms expires.
type prior struct {
	i       int
	value   string
	expires int64
}

func parseGrant(g *group, reply []int64, owner, supersede string) (grant, error) {
	if len(reply) < 2 || reply[0] != 1 || (len(reply)-2)%4 != 0 {
		return grant{}, errBadReply
	}
	gr := grant{g: g, fence: reply[1]}
	for r := reply[2:]; len(r) > 0; r = r[4:] {
		if r[0] < 1 || int(r[0]) > len(g.keys) {
			return grant{}, errBadReply
		}
		who := owner
		if r[3] == 1 {
			who = supersede
		}
		gr.prev = append(gr.prev, prior{i: int(r[0]) - 1, value: fenceValue(who, r[1]), expires: r[2]})
	}
	return gr, nil
}

// promote brings every section of a cross-section hold to its final fence
// (step 2 of the package comment). If it cannot, it gives everything back
// and returns ESEATTAKEN or EUNAVAILABLE.
func (h *Holds) promote(ctx, parent context.Context, owner string, grants []grant, final int64) error {
	var execs []rueidis.LuaExec
	var which []*group
	for _, gr := range grants {
		if gr.fence == final {
			continue
		}
		execs = append(execs, rueidis.LuaExec{
			Keys: append([]string{gr.g.counter}, gr.g.keys...),
			Args: []string{owner, strconv.FormatInt(gr.fence, 10), strconv.FormatInt(final, 10)},
		})
		which = append(which, gr.g)
	}
	if len(execs) == 0 {
		return nil
	}
	lost := make(map[string]bool)
	var failed error
	for j, r := range promoteScript.execMulti(ctx, h.client, execs) {
		reply, err := r.AsIntSlice()
		if err == nil && len(reply) == 0 {
			err = errBadReply
		}
		if err != nil {
			failed = err
			continue
		}
		which[j].mark(reply[1:], lost)
	}
	if failed == nil && len(lost) == 0 {
		return nil
	}
	// Each section is under its own fence or, if promoted, the final one.
	h.giveBack(parent, undoGrants(owner, grants, final))
	if failed != nil {
		return boxoffice.Unavailable("the seat hold store", failed)
	}
	var all []string
	for _, gr := range grants {
		all = append(all, gr.g.seats...)
	}
	return seatsTaken(all, lost, "the hold on some seats ran out while it was being taken")
}

// undo is one section to give back (see undoLua): the seats whose value is
// want, or starts with want if prefix, get their prior hold back or are
// deleted.
type undo struct {
	g      *group
	want   string
	prefix bool
	prev   []prior
}

// undoGrants lists the undos of grants; with final > 0, also of the same
// seats under the final fence, for sections that may have been promoted.
func undoGrants(owner string, grants []grant, final int64) []undo {
	var back []undo
	for _, gr := range grants {
		back = append(back, undo{g: gr.g, want: fenceValue(owner, gr.fence), prev: gr.prev})
		if final > 0 && gr.fence != final {
			back = append(back, undo{g: gr.g, want: fenceValue(owner, final), prev: gr.prev})
		}
	}
	return back
}

// giveBack runs the undos in one round trip with a context of its own: it
// compensates a call whose own context may be spent. If it fails too, the
// seats run out with their TTL.
func (h *Holds) giveBack(parent context.Context, back []undo) {
	if len(back) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(parent), h.timeout())
	defer cancel()
	execs := make([]rueidis.LuaExec, len(back))
	for i, u := range back {
		mode := "exact"
		if u.prefix {
			mode = "prefix"
		}
		args := []string{u.want, mode, u.g.plen}
		if len(u.prev) > 0 {
			n := len(u.g.keys)
			args = append(args, make([]string, 2*n)...)
			for _, p := range u.prev {
				args[3+p.i] = p.value
				args[3+n+p.i] = strconv.FormatInt(p.expires, 10)
			}
		}
		execs[i] = rueidis.LuaExec{Keys: append([]string{u.g.index}, u.g.keys...), Args: args}
	}
	undoScript.execMulti(ctx, h.client, execs)
}

// takenIn adds to taken the seats of groups held by owners other than
// owner and supersede. It is best effort: it only makes an ESEATTAKEN more
// complete.
func (h *Holds) takenIn(ctx context.Context, owner, supersede string, groups []*group, taken map[string]bool) {
	if len(groups) == 0 {
		return
	}
	vals, err := h.mget(ctx, groups)
	if err != nil {
		return
	}
	mine, sup := owner+":", supersede+":"
	for gi, g := range groups {
		for j, v := range vals[gi] {
			if v != "" && !strings.HasPrefix(v, mine) && (supersede == "" || !strings.HasPrefix(v, sup)) {
				taken[g.seats[j]] = true
			}
		}
	}
}

// seatsTaken is the ESEATTAKEN error for the seats in taken, listed in the
// order of seatIDs.
func seatsTaken(seatIDs []string, taken map[string]bool, msg string) *boxoffice.Error {
	seats := make([]string, 0, len(taken))
	for _, id := range seatIDs {
		if taken[id] {
			seats = append(seats, id)
			delete(taken, id)
		}
	}
	if msg == "" {
		msg = "some seats are held by someone else"
	}
	return &boxoffice.Error{Code: boxoffice.ESEATTAKEN, Message: msg, Seats: seats}
}

var errBadReply = errors.New("redis: unexpected script reply")

// Release deletes the holds on seatIDs that belong to owner, leaving other
// owners' holds alone, and returns how many it deleted. Seats in several
// sections are released in one round trip, section by section (not
// atomically across sections). It returns EUNAVAILABLE, with the count of
// the sections that did answer, when Redis fails.
func (h *Holds) Release(ctx context.Context, eventID boxoffice.ID, seatIDs []string, owner boxoffice.ID) (int, error) {
	if len(seatIDs) == 0 {
		return 0, nil
	}
	ctx, cancel := context.WithTimeout(ctx, h.timeout())
	defer cancel()
	groups := h.groups(eventID, seatIDs, true)
	execs := make([]rueidis.LuaExec, len(groups))
	for i, g := range groups {
		execs[i] = rueidis.LuaExec{Keys: append([]string{g.index}, g.keys...), Args: []string{owner.String(), g.plen}}
	}
	n := 0
	var failed error
	for _, r := range releaseScript.execMulti(ctx, h.client, execs) {
		freed, err := r.AsInt64()
		if err != nil {
			failed = err
			continue
		}
		n += int(freed)
	}
	if failed != nil {
		return n, boxoffice.Unavailable("the seat hold store", failed)
	}
	return n, nil
}

// Verify returns nil if every seat is held by owner under fence, EHOLDLOST
// listing the seats that are not, EINVALID for no seats or a seat id without
// a section, EUNAVAILABLE when Redis fails. It reads all sections in one
// round trip, not atomically across sections.
func (h *Holds) Verify(ctx context.Context, eventID boxoffice.ID, seatIDs []string, owner boxoffice.ID, fence int64) error {
	if err := validSeats(seatIDs); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, h.timeout())
	defer cancel()
	groups := h.groups(eventID, seatIDs, true)
	vals, err := h.mget(ctx, groups)
	if err != nil {
		return boxoffice.Unavailable("the seat hold store", err)
	}
	want := fenceValue(owner.String(), fence)
	lost := make(map[string]bool)
	for gi, g := range groups {
		for j, v := range vals[gi] {
			if v != want {
				lost[g.seats[j]] = true
			}
		}
	}
	if len(lost) == 0 {
		return nil
	}
	seats := make([]string, 0, len(lost))
	for _, id := range seatIDs {
		if lost[id] {
			seats = append(seats, id)
			delete(lost, id)
		}
	}
	return &boxoffice.Error{Code: boxoffice.EHOLDLOST, Message: "the hold has expired or was taken over", Seats: seats}
}

// Held reports for each of seatIDs whether anyone holds it, aligned with
// seatIDs, in one pipelined round trip. A section asked for indexedRead
// seats or more (a seat map's read: every seat) is read from its index of
// live holds, one command returning only the seats held; a smaller one by
// MGET of its seats (in chunks of mgetChunk). A seat id without a section
// is simply not held. It returns EUNAVAILABLE when Redis fails.
func (h *Holds) Held(ctx context.Context, eventID boxoffice.ID, seatIDs []string) ([]bool, error) {
	out := make([]bool, len(seatIDs))
	if len(seatIDs) == 0 {
		return out, nil
	}
	ctx, cancel := context.WithTimeout(ctx, h.timeout())
	defer cancel()
	groups := h.sections(eventID, seatIDs, false)
	held, err := h.held(ctx, groups, func(g *group) bool { return len(g.seats) >= indexedRead })
	if err != nil {
		return nil, boxoffice.Unavailable("the seat hold store", err)
	}
	for gi, g := range groups {
		for j, is := range held[gi] {
			out[g.pos[j]] = is
		}
	}
	return out, nil
}

// indexedRead is how many seats of one section Held must be asked for to
// read the section's index rather than its seats. The index costs the
// server in proportion to the section's live holds, MGET to the seats
// asked; a seat map asks for every seat, most of them free.
const indexedRead = 64

// held reads whether the seats of groups are held, aligned with each
// group's keys, in one DoMulti: from the index where indexed says so, by
// MGET elsewhere. The index entries were written with the holds, each
// with its expiry by the server's clock; a hold counts while its entry's
// expiry is not past by this process's clock, so a seat whose hold ran out
// within the clocks' difference may show held, or free, for that long.
func (h *Holds) held(ctx context.Context, groups []*group, indexed func(*group) bool) ([][]bool, error) {
	var cmds rueidis.Commands
	var from []int // the first command of each group
	now := strconv.FormatInt(time.Now().UnixMilli(), 10)
	for _, g := range groups {
		from = append(from, len(cmds))
		if indexed(g) {
			cmds = append(cmds, h.client.B().Zrangebyscore().Key(g.index).Min(now).Max("+inf").Build())
		} else {
			cmds = h.mgets(cmds, g)
		}
	}
	res := h.client.DoMulti(ctx, cmds...)
	out := make([][]bool, len(groups))
	for gi, g := range groups {
		out[gi] = make([]bool, len(g.seats))
		if indexed(g) {
			ids, err := res[from[gi]].AsStrSlice()
			if err != nil {
				return nil, err
			}
			live := make(map[string]bool, len(ids))
			for _, id := range ids {
				live[id] = true
			}
			for j, id := range g.seats {
				out[gi][j] = live[id]
			}
			continue
		}
		vals, err := readMget(res[from[gi]:], len(g.seats))
		if err != nil {
			return nil, err
		}
		for j, v := range vals {
			out[gi][j] = v != ""
		}
	}
	return out, nil
}

// mget reads the seat values of groups, aligned with each group's keys, ""
// for a free seat, in one DoMulti.
func (h *Holds) mget(ctx context.Context, groups []*group) ([][]string, error) {
	var cmds rueidis.Commands
	var from []int
	for _, g := range groups {
		from = append(from, len(cmds))
		cmds = h.mgets(cmds, g)
	}
	res := h.client.DoMulti(ctx, cmds...)
	out := make([][]string, len(groups))
	for gi, g := range groups {
		vals, err := readMget(res[from[gi]:], len(g.seats))
		if err != nil {
			return nil, err
		}
		out[gi] = vals
	}
	return out, nil
}

// mgets appends the MGETs of g's seats to cmds, mgetChunk keys each.
func (h *Holds) mgets(cmds rueidis.Commands, g *group) rueidis.Commands {
	keys := g.seatKeys()
	for i := 0; i < len(keys); i += mgetChunk {
		cmds = append(cmds, h.client.B().Mget().Key(keys[i:min(i+mgetChunk, len(keys))]...).Build())
	}
	return cmds
}

// readMget reads n values from the MGETs in res of mgetChunk keys each
// (the last may have fewer), "" for a missing key.
func readMget(res []rueidis.RedisResult, n int) ([]string, error) {
	out := make([]string, n)
	for c := 0; c*mgetChunk < n; c++ {
		vals, err := res[c].ToArray()
		if err != nil {
			return nil, err
		}
		if len(vals) != min(mgetChunk, n-c*mgetChunk) {
			return nil, errBadReply
		}
		for j := range vals {
			if vals[j].IsNil() {
				continue
			}
			v, err := vals[j].ToString()
			if err != nil {
				return nil, err
			}
			out[c*mgetChunk+j] = v
		}
	}
	return out, nil
}

// Ping reports whether Redis answers, as EUNAVAILABLE if it does not.
func (h *Holds) Ping(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, h.timeout())
	defer cancel()
	if err := h.client.Do(ctx, h.client.B().Ping().Build()).Error(); err != nil {
		return boxoffice.Unavailable("the seat hold store", err)
	}
	return nil
}
