package leader

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Schema creates the ledger and its audit log. The log, filled by a trigger,
// holds every write that reached the table, in order, with the token it
// replaced: what the experiment counts stale writes from.
const Schema = `
CREATE TABLE IF NOT EXISTS ledger (
	entry    bigint PRIMARY KEY,
	token    bigint NOT NULL,
	node     text   NOT NULL,
	seq      bigint NOT NULL,
	bookings bigint NOT NULL DEFAULT 1,
	updated  timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE TABLE IF NOT EXISTS ledger_log (
	id         bigserial PRIMARY KEY,
	entry      bigint NOT NULL,
	token      bigint NOT NULL,
	prev_token bigint,
	node       text   NOT NULL,
	at         timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE OR REPLACE FUNCTION ledger_audit() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO ledger_log (entry, token, prev_token, node)
	VALUES (NEW.entry, NEW.token, CASE WHEN TG_OP = 'UPDATE' THEN OLD.token END, NEW.node);
	RETURN NULL;
END $$;
DROP TRIGGER IF EXISTS ledger_audit ON ledger;
CREATE TRIGGER ledger_audit AFTER INSERT OR UPDATE ON ledger
	FOR EACH ROW EXECUTE FUNCTION ledger_audit();
`

// bookSQL books entries 1..$4 in one statement (rows in key order, so two
// leaders never deadlock). The fenced form adds the guard: an entry that has
// seen a newer token is left alone, and the affected-row count says how many
// landed.
const (
	bookSQL = `
INSERT INTO ledger (entry, token, node, seq)
SELECT e, $1, $2, $3 FROM generate_series(1, $4::int) AS e
ON CONFLICT (entry) DO UPDATE
	SET token = excluded.token, node = excluded.node, seq = excluded.seq,
	    bookings = ledger.bookings + 1, updated = clock_timestamp()`
	fenceSQL = `
	WHERE excluded.token >= ledger.token`
)

// PGStore books into PostgreSQL.
type PGStore struct {
	pool *pgxpool.Pool
}

var _ Store = (*PGStore)(nil)

// NewPGStore connects to the database at dsn (a PostgreSQL URL or keyword
// string).
func NewPGStore(ctx context.Context, dsn string) (*PGStore, error) {
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		return nil, fmt.Errorf("connecting to the ledger database: %w", err)
	}
	return &PGStore{pool: pool}, nil
}

// Migrate creates the schema if it is missing.
func (s *PGStore) Migrate(ctx context.Context) error {
	if _, err := s.pool.Exec(ctx, Schema); err != nil {
		return fmt.Errorf("creating the ledger schema: %w", err)
	}
	return nil
}

// Book implements Store.
func (s *PGStore) Book(ctx context.Context, b Booking) (int, error) {
	q := bookSQL
	if b.Fenced {
		q += fenceSQL
	}
	tag, err := s.pool.Exec(ctx, q, b.Token, b.Node, b.Seq, b.Entries)
	if err != nil {
		return 0, fmt.Errorf("booking %d entries with token %d: %w", b.Entries, b.Token, err)
	}
	return int(tag.RowsAffected()), nil
}

// Pool gives the experiment access to the database.
func (s *PGStore) Pool() *pgxpool.Pool { return s.pool }

// Close closes the connections.
func (s *PGStore) Close() { s.pool.Close() }
