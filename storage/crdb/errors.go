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
	codeProtocolViolation    = "08P01"
	codeLockNotAvailable     = "55P03"
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
		code == codeLockNotAvailable:  // lock not available
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

// configurationProblems are the SQLSTATEs with which a database that answers refuses what the
// URL asks of it, and what each tells the operator to change. The same URL meets the same
// refusal on every attempt unless someone mends it, so Open reports them as such
// (refuseConfiguration: serve gives them a minute, migrate none) rather than as an outage to
// wait out. A database on its way up or down answers otherwise (57P03 starting
// up, 57P01 shutting down, 53300 too many connections): those are waited for.
var configurationProblems = map[string]string{
	"28P01": "the database refused the password of the URL's user (the URL's own password wins over $PGPASSWORD and ~/.pgpass)",
	"28000": "the database refused the user: no such role, or no pg_hba.conf entry lets it in from this host with this sslmode",
	"3D000": "the database named in the URL does not exist: create it, or correct the URL's path",
	"3F000": "there is no schema to create hookverify's tables in: the URL's search_path names no schema that exists",
	"42501": "the URL's user lacks a privilege: the first start (and one after an upgrade) creates tables, which needs CREATE on the schema " +
		"(since PostgreSQL 15 only the database's owner has it on public); or run `hookverify migrate` as the schema's owner, after which " +
		"serve needs only CONNECT on the database and SELECT, INSERT, UPDATE, DELETE on hookverify's tables",
}

// settingProblems are configuration problems only when the server answers them to a
// connection attempt: pgx sends every query parameter it does not know itself to the server as
// a setting, so a misspelled sslmode, say, is refused at every connection. From a statement
// they would mean something else.
var settingProblems = map[string]string{
	"42704": "the database knows no setting of that name: check the spelling of the URL's query parameters (sslmode, connect_timeout, pool_max_conns, ...) and of its options",
	"22023": "the database refused the value of a setting given in the URL (a query parameter or its options)",
}

// tlsRefusedText is pgconn's error when the server answers the URL's sslmode=require (or
// verify-ca, verify-full) that it does not speak TLS. It carries no SQLSTATE, so it is known
// by its words; TestOpenRefusesAConfigurationTheDatabaseRejects notices if they change.
const (
	tlsRefusedText = "server refused TLS connection"
	tlsRefusedHint = "the database does not speak TLS, and the URL's sslmode requires it: turn TLS on in the server (ssl = on), or, on a network you trust, lower sslmode"
)

// requiresTLS reports whether config connects only with TLS (sslmode require, verify-ca or
// verify-full), as opposed to trying TLS first and then without it (prefer, pgx's default) or
// the other way round (allow). Only then is a server's refusal of TLS the configuration's
// problem: under prefer, pgx joins the TLS attempt's refusal to the error of the attempt
// without TLS, which may be one to wait for (53300 too many connections, 57P03 starting up).
func requiresTLS(config *pgconn.Config) bool {
	if config == nil || config.TLSConfig == nil {
		return false
	}
	for _, f := range config.Fallbacks {
		if f.TLSConfig == nil {
			return false
		}
	}
	return true
}

// ErrRefused marks Open's errors for a database that answered and refused the URL's
// configuration (with ErrInvalid). Unlike a URL that cannot be parsed, such a refusal is not
// certain to last: the deployment that started hookverify may create the database or the role
// a moment later, and CockroachDB answers 28000 ("internal error while retrieving user
// account") to every user but root while it cannot read its users table, a cluster coming up
// or without quorum for a while. serve keeps trying for a while before it gives up on one.
var ErrRefused = errors.New("the database refused the connection's configuration")

// refuseConfiguration returns err as storage.ErrInvalid and ErrRefused, naming the likely
// cause, when the database refused the URL's configuration (configurationProblems,
// settingProblems), and err unchanged otherwise. Open calls it: serve gives up on ErrInvalid
// (on ErrRefused once it has lasted a while), where it retries ErrUnavailable for ever.
// Later, the same refusals stay ErrUnavailable (a password changed under a running
// instance): callers then get UNAVAILABLE, which is true of that instance.
// pgconn's connection errors name the user, database and host but never the password.
func refuseConfiguration(err error) error {
	var connectErr *pgconn.ConnectError
	connecting := errors.As(err, &connectErr)
	hint, ok := configurationProblems[sqlState(err)]
	if !ok && connecting {
		hint, ok = settingProblems[sqlState(err)]
	}
	if !ok && connecting && requiresTLS(connectErr.Config) && strings.Contains(connectErr.Error(), tlsRefusedText) {
		hint, ok = tlsRefusedHint, true
	}
	if !ok {
		return err
	}
	// A connection refused is wrapped as ErrUnavailable by retry: report pgconn's error,
	// which says which user, database and host it was, without that sentinel.
	cause := err
	if connecting {
		cause = connectErr
	}
	return fmt.Errorf("crdb: open: %w: %s: %w", storage.ErrInvalid, hint, &refusal{cause})
}

// RefusedConfiguration returns err as Open returns a configuration the database refuses
// (storage.ErrInvalid and ErrRefused, with a hint) when it carries one of those SQLSTATEs
// (configurationProblems), and err unchanged otherwise. It is for the writes a caller runs
// right after Open, before serving: a role whose grants miss a table meets 42501 there, the
// same configuration problem as at Open, which retrying as an outage never mends.
func RefusedConfiguration(err error) error {
	if err == nil {
		return nil
	}
	return refuseConfiguration(err)
}

// refusal wraps a refused configuration's cause so that errors.Is finds ErrRefused too,
// without adding ErrRefused's words to the message.
type refusal struct{ err error }

func (r *refusal) Error() string { return r.err.Error() }

func (r *refusal) Unwrap() []error { return []error{ErrRefused, r.err} }
