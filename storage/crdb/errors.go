package crdb

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/hookverify/hookverify/storage"
)

// SQLSTATE codes the store acts on. Errors are matched by code, never by message.
const (
	codeUniqueViolation      = "23505"
	codeForeignKeyViolation  = "23503"
	codeSerializationFailure = "40001"
	codeDeadlockDetected     = "40P01"
	// codeStatementCompletionUnknown is how CockroachDB reports that it cannot tell whether a
	// transaction committed.
	codeStatementCompletionUnknown = "40003"
)

// sqlState returns the SQLSTATE of err, or "" if the server did not report one.
func sqlState(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code
	}
	return ""
}

// errRunAgain is returned by transaction work that saw the effect of a concurrent
// transaction it cannot act on yet; like a serialization failure, it asks for another attempt.
var errRunAgain = errors.New("crdb: concurrent change, run again")

// isRetryableConflict reports a transaction the server aborted because of a concurrent one;
// it left nothing behind and the same work can simply run again.
func isRetryableConflict(err error) bool {
	if errors.Is(err, errRunAgain) {
		return true
	}
	switch sqlState(err) {
	case codeSerializationFailure, codeDeadlockDetected:
		return true
	}
	return false
}

// isUnavailable reports a server error that says nothing about the request and everything
// about the database: shutdowns, lost connections, timeouts, resource limits. The caller
// judges driver errors without a SQLSTATE by whether the connection survived.
func isUnavailable(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	code := sqlState(err)
	switch {
	case strings.HasPrefix(code, "08"), // connection exception
		strings.HasPrefix(code, "40"), // transaction rollback that survived our retries
		strings.HasPrefix(code, "53"), // insufficient resources
		strings.HasPrefix(code, "57"), // operator intervention: shutdown, query canceled
		strings.HasPrefix(code, "58"), // system error
		code == "55P03":               // lock not available
		return true
	}
	return false
}

var sentinels = []error{storage.ErrNotFound, storage.ErrAlreadyExists, storage.ErrInvalid,
	storage.ErrUnavailable, storage.ErrLeaseLost, storage.ErrClosed}

// isSentinel reports whether err already carries one of the storage sentinels.
func isSentinel(err error) bool {
	for _, sentinel := range sentinels {
		if errors.Is(err, sentinel) {
			return true
		}
	}
	return false
}

// mapError turns a database error into one of the storage sentinels, wrapped with the
// operation's name and the original error so both errors.Is checks and logs work.
func mapError(op string, err error) error {
	if err == nil {
		return nil
	}
	if isSentinel(err) {
		return fmt.Errorf("crdb: %s: %w", op, err)
	}
	if errors.Is(err, errPoolClosed) {
		return fmt.Errorf("crdb: %s: %w: %w", op, storage.ErrClosed, err)
	}
	code := sqlState(err)
	var sentinel error
	switch {
	case code == codeUniqueViolation:
		sentinel = storage.ErrAlreadyExists
	case code == codeForeignKeyViolation:
		// The only foreign key is secrets.endpoint_id: a secret for an unknown endpoint.
		sentinel = storage.ErrNotFound
	case strings.HasPrefix(code, "22"):
		// Data exception: text that is not valid UTF-8 or holds NUL, a value out of range.
		sentinel = storage.ErrInvalid
	case isUnavailable(err):
		sentinel = storage.ErrUnavailable
	default:
		return fmt.Errorf("crdb: %s: %w", op, err)
	}
	return fmt.Errorf("crdb: %s: %w: %w", op, sentinel, err)
}
