package stepdown_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"

	"github.com/clockwatch/clockwatch/stepdown"
)

// fakeResult is what a driver reports for one statement.
type fakeResult struct {
	rows int64
	err  error
}

func (r fakeResult) LastInsertId() (int64, error) { return 0, errors.New("not supported") }
func (r fakeResult) RowsAffected() (int64, error) { return r.rows, r.err }

// fakeExecer answers every statement with one result and records it. The
// fence's SQL runs against a real PostgreSQL in examples/redislock; this
// checks the reading of the affected-row counts.
type fakeExecer struct {
	res   sql.Result
	err   error
	query string
	args  []any
}

func (f *fakeExecer) ExecContext(_ context.Context, q string, args ...any) (sql.Result, error) {
	f.query, f.args = q, args
	return f.res, f.err
}

func TestFenceReadsAffectedRows(t *testing.T) {
	t.Parallel()
	driverErr := errors.New("connection reset")
	tests := []struct {
		name    string
		dialect stepdown.Dialect
		op      string
		res     sql.Result
		execErr error
		want    string // "" ok, "fenced", or a substring of the error
	}{
		{"pg claim inserted or raised", stepdown.PostgreSQL, "claim", fakeResult{rows: 1}, nil, ""},
		{"pg claim refused", stepdown.PostgreSQL, "claim", fakeResult{rows: 0}, nil, "fenced"},
		{"pg claim two rows", stepdown.PostgreSQL, "claim", fakeResult{rows: 2}, nil, "2 rows affected, want 0 or 1"},
		{"mysql claim inserted", stepdown.MySQL, "claim", fakeResult{rows: 1}, nil, ""},
		{"mysql claim raised", stepdown.MySQL, "claim", fakeResult{rows: 2}, nil, ""},
		{"mysql claim refused", stepdown.MySQL, "claim", fakeResult{rows: 0}, nil, "fenced"},
		{"claim error", stepdown.PostgreSQL, "claim", nil, driverErr, "connection reset"},
		{"claim without a count", stepdown.PostgreSQL, "claim", fakeResult{err: errors.New("no count")}, nil, "no affected-row count"},
		{"pg check holds", stepdown.PostgreSQL, "check", fakeResult{rows: 1}, nil, ""},
		{"pg check fenced", stepdown.PostgreSQL, "check", fakeResult{rows: 0}, nil, "fenced"},
		{"mysql check holds", stepdown.MySQL, "check", fakeResult{rows: 1}, nil, ""},
		{"mysql check two rows", stepdown.MySQL, "check", fakeResult{rows: 2}, nil, "2 rows affected"},
		{"check error", stepdown.MySQL, "check", nil, driverErr, "connection reset"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f, err := stepdown.NewFence(tt.dialect, "")
			if err != nil {
				t.Fatal(err)
			}
			db := &fakeExecer{res: tt.res, err: tt.execErr}
			var got error
			wantSQL := f.ClaimSQL()
			if tt.op == "claim" {
				got = f.Claim(t.Context(), db, "comp:lock:recon:2025-09-14", 7)
			} else {
				got = f.Check(t.Context(), db, "comp:lock:recon:2025-09-14", 7)
				wantSQL = f.CheckSQL()
			}
			if db.query != wantSQL || len(db.args) != 2 || db.args[0] != "comp:lock:recon:2025-09-14" || db.args[1] != int64(7) {
				t.Errorf("ran %q %v, want %q with the resource and the epoch", db.query, db.args, wantSQL)
			}
			switch {
			case tt.want == "" && got != nil:
				t.Errorf("got %v, want nil", got)
			case tt.want == "fenced":
				var fe *stepdown.FencedError
				if !errors.Is(got, stepdown.ErrFenced) || !errors.As(got, &fe) || fe.Op != tt.op || fe.Epoch != 7 {
					t.Errorf("got %v, want a *FencedError for the %s of epoch 7", got, tt.op)
				}
			case tt.want != "":
				if got == nil || !strings.Contains(got.Error(), tt.want) || errors.Is(got, stepdown.ErrFenced) {
					t.Errorf("got %v, want an error (not fenced) containing %q", got, tt.want)
				}
				if tt.execErr != nil && !errors.Is(got, tt.execErr) {
					t.Errorf("got %v, want it to wrap %v", got, tt.execErr)
				}
			}
		})
	}
}

func TestFenceSQL(t *testing.T) {
	t.Parallel()
	pg, err := stepdown.NewFence(stepdown.PostgreSQL, "billing.fence")
	if err != nil {
		t.Fatal(err)
	}
	my, err := stepdown.NewFence(stepdown.MySQL, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ got, want string }{
		{pg.ClaimSQL(), "INSERT INTO billing.fence AS f (name, epoch) VALUES ($1, $2) ON CONFLICT (name) DO UPDATE SET epoch = excluded.epoch WHERE excluded.epoch > f.epoch"},
		{pg.CheckSQL(), "UPDATE billing.fence SET writes = writes + 1 WHERE name = $1 AND epoch = $2"},
		{my.ClaimSQL(), "INSERT INTO lock_fence (name, epoch) VALUES (?, ?) ON DUPLICATE KEY UPDATE epoch = IF(VALUES(epoch) > epoch, VALUES(epoch), epoch)"},
		{my.CheckSQL(), "UPDATE lock_fence SET writes = writes + 1 WHERE name = ? AND epoch = ?"},
		{my.CreateTableSQL(), "CREATE TABLE IF NOT EXISTS lock_fence (name VARCHAR(255) PRIMARY KEY, epoch BIGINT NOT NULL, writes BIGINT NOT NULL DEFAULT 0)"},
	} {
		if tt.got != tt.want {
			t.Errorf("got  %s\nwant %s", tt.got, tt.want)
		}
	}
}

func TestNewFenceRefusesBadInput(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		dialect stepdown.Dialect
		table   string
		want    string
	}{
		{stepdown.PostgreSQL, "fence; DROP TABLE orders", `table "fence; DROP TABLE orders" is not a plain SQL identifier`},
		{stepdown.PostgreSQL, "a.b.c", `table "a.b.c" is not a plain SQL identifier`},
		{stepdown.Dialect(9), "", "unknown dialect 9"},
	} {
		if _, err := stepdown.NewFence(tt.dialect, tt.table); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("NewFence(%v, %q) = %v, want an error containing %q", tt.dialect, tt.table, err, tt.want)
		}
	}
}

// A job that must run once per lock claims the resource with its epoch
// before it reads what to do, then checks the claim in every transaction that
// writes; a stale holder's check fails and it stops. The epoch comes from a
// store that never goes back: here a PostgreSQL sequence.
func ExampleFence() {
	ctx := context.Background()
	var db *sql.DB // sql.Open("pgx", ...)
	fence, _ := stepdown.NewFence(stepdown.PostgreSQL, "")
	const resource = "comp:lock:recon:2025-09-14"

	// ... the lock is taken (SET resource uuid NX PX 30000) ...
	var epoch int64
	if err := db.QueryRowContext(ctx, "SELECT nextval('lock_epoch')").Scan(&epoch); err != nil {
		return
	}
	if err := fence.Claim(ctx, db, resource, epoch); err != nil {
		return // errors.Is(err, stepdown.ErrFenced): someone newer holds it
	}
	rows, _ := db.QueryContext(ctx, "SELECT id FROM orders WHERE NOT reconciled ORDER BY id")
	var orders []int64
	for rows.Next() {
		var id int64
		_ = rows.Scan(&id)
		orders = append(orders, id)
	}
	for _, id := range orders {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return
		}
		if err := fence.Check(ctx, tx, resource, epoch); err != nil {
			_ = tx.Rollback() // fenced: a newer holder took over; stop
			return
		}
		_, _ = tx.ExecContext(ctx, "INSERT INTO payments (order_id, epoch) VALUES ($1, $2)", id, epoch)
		_, _ = tx.ExecContext(ctx, "UPDATE orders SET reconciled = true WHERE id = $1", id)
		if err := tx.Commit(); err != nil {
			return
		}
	}
}
