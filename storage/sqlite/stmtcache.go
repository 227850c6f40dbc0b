package sqlite

import (
	"context"
	"database/sql"
	"sync"
)

// maxCachedStmts bounds stmtCache. The texts it holds come from a few shapes (a lease's
// filter, for one), so the bound is only a guard.
const maxCachedStmts = 256

// stmtCache keeps statements of the write paths prepared on the writer connection, by SQL
// text. modernc's driver prepares a statement at every call that does not use a prepared
// one, and a lease spent more time parsing its statements than running them (BENCHMARKS.md).
type stmtCache struct {
	mu     sync.Mutex
	byText map[string]*sql.Stmt
}

// prepared returns text prepared on the writer, for a write transaction to use through
// tx.StmtContext, and a function to call once that transaction has ended. Call it before
// the transaction begins: the writer has one connection, which the transaction holds.
func (s *Store) prepared(ctx context.Context, text string) (stmt *sql.Stmt, done func(), err error) {
	c := &s.writeStmts
	c.mu.Lock()
	defer c.mu.Unlock()
	if stmt, ok := c.byText[text]; ok {
		return stmt, func() {}, nil
	}
	if stmt, err = s.writer.PrepareContext(ctx, text); err != nil {
		return nil, nil, err
	}
	if len(c.byText) >= maxCachedStmts {
		return stmt, func() { _ = stmt.Close() }, nil
	}
	if c.byText == nil {
		c.byText = map[string]*sql.Stmt{}
	}
	c.byText[text] = stmt
	return stmt, func() {}, nil
}

func (c *stmtCache) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, stmt := range c.byText {
		_ = stmt.Close()
	}
	c.byText = nil
}
