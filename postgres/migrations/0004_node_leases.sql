-- 0004_node_leases: Snowflake node ids leased by time (see nodeid.go),
-- replacing session advisory locks, which a server restart drops silently.
-- One row per node id 0..1023, all there from the start. A lease is live
-- while expires_at >= now() by the database's clock; holder is a random
-- token per acquisition, so only the process that took the lease renews or
-- releases it. reserved_ms (milliseconds since snowflake.Epoch) is the
-- highest millisecond any holder of the node id was allowed to put in an
-- id; it never goes down, and the next holder starts strictly above it.

CREATE TABLE node_leases (
    node_id     integer     PRIMARY KEY CHECK (node_id BETWEEN 0 AND 1023),
    holder      text,                            -- NULL: never taken, or released
    expires_at  timestamptz,                     -- NULL: free
    reserved_ms bigint      NOT NULL DEFAULT 0
);

INSERT INTO node_leases (node_id) SELECT generate_series(0, 1023);
