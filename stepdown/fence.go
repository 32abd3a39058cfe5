package stepdown

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"regexp"
)

// A Fence is the data side's guard for a lock that can be lost without its
// holder knowing: a Redis lock that evaporates in a Sentinel failover or a
// forward clock step, a lease that expired while its holder was paused or
// its clock stepped back. clockwatch's stepdown socket tells a holder when
// its own node's clock jumps; the fence refuses a stale holder's writes
// whatever the cause.
//
// Every time a worker takes the lock it gets an epoch from a store that
// never goes back (a PostgreSQL sequence, etcd's revision of the lock key;
// not a Redis INCR, which is lost with the lock in a failover) and, before
// it reads what it has to do, claims the resource with it:
//
//	INSERT INTO lock_fence AS f (name, epoch) VALUES ($1, $2)
//	ON CONFLICT (name) DO UPDATE SET epoch = excluded.epoch
//	WHERE excluded.epoch > f.epoch
//
// One affected row: the claim is the newest. None: a holder with an equal
// or newer epoch has claimed the resource, and this one must not work. Then
// every write of the side effect runs in a transaction that first checks
// that the claim still stands:
//
//	UPDATE lock_fence SET writes = writes + 1 WHERE name = $1 AND epoch = $2
//
// One affected row: go on; the row stays locked until the transaction ends,
// so a newer claim waits for it and the newer holder, which reads its work
// after claiming, sees this write. None: a newer holder has claimed; roll
// back and stop. MySQL's forms are the same with ? placeholders and the
// claim as INSERT … ON DUPLICATE KEY UPDATE epoch = IF(VALUES(epoch) >
// epoch, VALUES(epoch), epoch), where 1 (inserted) or 2 (raised) affected
// rows mean claimed and 0 refused (connect without CLIENT_FOUND_ROWS, which
// would report 1 for a refused claim). docs/incident-replay.md in the
// repository has the whole story and the SQL for other languages.
type Fence struct {
	dialect Dialect
	table   string
}

// Dialect selects the SQL a Fence speaks.
type Dialect int

const (
	// PostgreSQL: INSERT … ON CONFLICT … DO UPDATE … WHERE, $n placeholders.
	PostgreSQL Dialect = iota
	// MySQL (and MariaDB): INSERT … ON DUPLICATE KEY UPDATE, ? placeholders.
	MySQL
)

func (d Dialect) String() string {
	switch d {
	case PostgreSQL:
		return "PostgreSQL"
	case MySQL:
		return "MySQL"
	}
	return fmt.Sprintf("Dialect(%d)", int(d))
}

// DefaultFenceTable is the table a Fence uses when NewFence is given none.
const DefaultFenceTable = "lock_fence"

var identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?$`)

// NewFence returns a fence kept in table (DefaultFenceTable when empty; a
// plain or schema-qualified name, since it is written into the SQL).
func NewFence(d Dialect, table string) (*Fence, error) {
	if d != PostgreSQL && d != MySQL {
		return nil, fmt.Errorf("fence: unknown dialect %d", int(d))
	}
	if table == "" {
		table = DefaultFenceTable
	}
	if !identifier.MatchString(table) {
		return nil, fmt.Errorf("fence: table %q is not a plain SQL identifier ([A-Za-z_][A-Za-z0-9_]*, optionally schema-qualified)", table)
	}
	return &Fence{dialect: d, table: table}, nil
}

// Execer runs a statement: *sql.DB, *sql.Tx and *sql.Conn are Execers.
type Execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// ErrFenced is what Claim and Check return (wrapped in a *FencedError) when
// a holder with a newer epoch owns the resource.
var ErrFenced = errors.New("fenced")

// FencedError says which claim or check the fence refused.
type FencedError struct {
	// Op is "claim" or "check".
	Op       string
	Resource string
	Epoch    int64
}

func (e *FencedError) Error() string {
	if e.Op == "claim" {
		return fmt.Sprintf("fenced: claim of %q with epoch %d refused: a holder with an equal or newer epoch has claimed it", e.Resource, e.Epoch)
	}
	return fmt.Sprintf("fenced: epoch %d no longer owns %q: a newer holder has claimed it", e.Epoch, e.Resource)
}

// Is makes errors.Is(err, ErrFenced) true.
func (e *FencedError) Is(target error) bool { return target == ErrFenced }

// CreateTableSQL is the fence table.
func (f *Fence) CreateTableSQL() string {
	if f.dialect == MySQL {
		return "CREATE TABLE IF NOT EXISTS " + f.table + " (name VARCHAR(255) PRIMARY KEY, epoch BIGINT NOT NULL, writes BIGINT NOT NULL DEFAULT 0)"
	}
	return "CREATE TABLE IF NOT EXISTS " + f.table + " (name text PRIMARY KEY, epoch bigint NOT NULL, writes bigint NOT NULL DEFAULT 0)"
}

// ClaimSQL is the statement Claim runs; its arguments are the resource and
// the epoch.
func (f *Fence) ClaimSQL() string {
	if f.dialect == MySQL {
		return "INSERT INTO " + f.table + " (name, epoch) VALUES (?, ?) ON DUPLICATE KEY UPDATE epoch = IF(VALUES(epoch) > epoch, VALUES(epoch), epoch)"
	}
	return "INSERT INTO " + f.table + " AS f (name, epoch) VALUES ($1, $2) ON CONFLICT (name) DO UPDATE SET epoch = excluded.epoch WHERE excluded.epoch > f.epoch"
}

// CheckSQL is the statement Check runs; its arguments are the resource and
// the epoch.
func (f *Fence) CheckSQL() string {
	if f.dialect == MySQL {
		return "UPDATE " + f.table + " SET writes = writes + 1 WHERE name = ? AND epoch = ?"
	}
	return "UPDATE " + f.table + " SET writes = writes + 1 WHERE name = $1 AND epoch = $2"
}

// Claim records epoch as the newest holder of resource. It returns a
// *FencedError when a holder with an equal or newer epoch has claimed it:
// two holders handed the same epoch (a counter that went back) cannot both
// own it. Claim before reading the work to do, so that the work read is what
// the previous holder left.
func (f *Fence) Claim(ctx context.Context, db Execer, resource string, epoch int64) error {
	res, err := db.ExecContext(ctx, f.ClaimSQL(), resource, epoch)
	if err != nil {
		return fmt.Errorf("claiming %q with epoch %d in %s: %w", resource, epoch, f.table, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("claiming %q with epoch %d in %s: the driver gives no affected-row count: %w", resource, epoch, f.table, err)
	}
	switch {
	case n == 0:
		return &FencedError{Op: "claim", Resource: resource, Epoch: epoch}
	case n == 1, n == 2 && f.dialect == MySQL:
		return nil
	}
	return fmt.Errorf("claiming %q with epoch %d in %s: %d rows affected, want 0 or 1: is name the table's primary key?", resource, epoch, f.table, n)
}

// Check confirms, inside the transaction tx that makes a write, that epoch
// still owns resource, and keeps the fence's row locked until tx ends so
// that no newer claim can land between the check and the commit. It returns
// a *FencedError when a newer holder has claimed the resource (or this epoch
// never claimed it): roll back and stop.
func (f *Fence) Check(ctx context.Context, tx Execer, resource string, epoch int64) error {
	res, err := tx.ExecContext(ctx, f.CheckSQL(), resource, epoch)
	if err != nil {
		return fmt.Errorf("checking the fence of %q for epoch %d in %s: %w", resource, epoch, f.table, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("checking the fence of %q for epoch %d in %s: the driver gives no affected-row count: %w", resource, epoch, f.table, err)
	}
	switch n {
	case 0:
		return &FencedError{Op: "check", Resource: resource, Epoch: epoch}
	case 1:
		return nil
	}
	return fmt.Errorf("checking the fence of %q for epoch %d in %s: %d rows affected, want 0 or 1: is name the table's primary key?", resource, epoch, f.table, n)
}
