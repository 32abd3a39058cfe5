package redislock

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/clockwatch/clockwatch/stepdown"
)

// Schema is the job's data: the day's orders, the compensation payments
// (the article's pay_comp_flow, one row per payment made, as the incident's
// table had: nothing in it stops a second payment of the same order) and the
// sequence the fenced job takes its epochs from. The fence's table is
// stepdown.Fence.CreateTableSQL.
const Schema = `
CREATE TABLE IF NOT EXISTS orders (
	id           bigint PRIMARY KEY,
	amount_cents bigint NOT NULL,
	reconciled   boolean NOT NULL DEFAULT false
);
CREATE TABLE IF NOT EXISTS pay_comp_flow (
	id           bigserial PRIMARY KEY,
	order_id     bigint NOT NULL,
	amount_cents bigint NOT NULL,
	worker       text   NOT NULL,
	epoch        bigint,
	created_at   timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE SEQUENCE IF NOT EXISTS comp_lock_epoch;
`

// Migrate creates the schema and fence's table if they are missing.
func Migrate(ctx context.Context, db *sql.DB, fence *stepdown.Fence) error {
	if _, err := db.ExecContext(ctx, Schema); err != nil {
		return fmt.Errorf("creating the schema: %w", err)
	}
	if _, err := db.ExecContext(ctx, fence.CreateTableSQL()); err != nil {
		return fmt.Errorf("creating the fence table: %w", err)
	}
	return nil
}

// Seed starts a day: n unreconciled orders, no payments, no fence. The
// epoch sequence goes on: it never goes back.
func Seed(ctx context.Context, db *sql.DB, fenceTable string, n int) error {
	_, err := db.ExecContext(ctx, `TRUNCATE orders, pay_comp_flow, `+fenceTable)
	if err != nil {
		return fmt.Errorf("emptying the tables: %w", err)
	}
	_, err = db.ExecContext(ctx, `INSERT INTO orders (id, amount_cents)
		SELECT g, 100 + (g * 7919) % 90000 FROM generate_series(1, $1::int) AS g`, n)
	if err != nil {
		return fmt.Errorf("seeding %d orders: %w", n, err)
	}
	return nil
}

// Tally is what the day's payments add up to.
type Tally struct {
	Orders     int64
	Reconciled int64
	// Payments is the number of rows in pay_comp_flow.
	Payments int64
	// PaidTwice counts the orders paid more than once: the article's
	// 11,437 of 23,000.
	PaidTwice int64
	// Excess is the payments beyond one per order.
	Excess int64
	// ExcessCents is what the excess payments cost.
	ExcessCents int64
	// ByWorker counts each worker's payments.
	ByWorker map[string]int64
}

// Count tallies the payments.
func Count(ctx context.Context, db *sql.DB) (Tally, error) {
	var t Tally
	err := db.QueryRowContext(ctx, `
		SELECT (SELECT count(*) FROM orders),
		       (SELECT count(*) FROM orders WHERE reconciled),
		       (SELECT count(*) FROM pay_comp_flow),
		       (SELECT count(*) FROM (SELECT order_id FROM pay_comp_flow GROUP BY order_id HAVING count(*) > 1) d),
		       (SELECT count(*) - count(DISTINCT order_id) FROM pay_comp_flow),
		       (SELECT coalesce(sum(amount_cents), 0) FROM pay_comp_flow)
		         - (SELECT coalesce(sum(amount_cents), 0) FROM orders WHERE id IN (SELECT order_id FROM pay_comp_flow))`).
		Scan(&t.Orders, &t.Reconciled, &t.Payments, &t.PaidTwice, &t.Excess, &t.ExcessCents)
	if err != nil {
		return t, fmt.Errorf("counting the payments: %w", err)
	}
	rows, err := db.QueryContext(ctx, `SELECT worker, count(*) FROM pay_comp_flow GROUP BY worker ORDER BY worker`)
	if err != nil {
		return t, fmt.Errorf("counting each worker's payments: %w", err)
	}
	defer rows.Close()
	t.ByWorker = map[string]int64{}
	for rows.Next() {
		var w string
		var n int64
		if err := rows.Scan(&w, &n); err != nil {
			return t, fmt.Errorf("counting each worker's payments: %w", err)
		}
		t.ByWorker[w] = n
	}
	if err := rows.Err(); err != nil {
		return t, fmt.Errorf("counting each worker's payments: %w", err)
	}
	return t, nil
}
