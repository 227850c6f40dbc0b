// Package sqlite is the embedded default storage backend: one SQLite database file in the data
// directory, through the pure-Go driver modernc.org/sqlite.
//
// Durability. Every connection runs with
//
//   - journal_mode=WAL: commits append to a write-ahead log, so readers never block the writer
//     nor the writer the readers;
//   - synchronous=FULL: the log is fsynced at every commit, so a transaction that returned is on
//     disk and survives a crash or power loss (NORMAL would only protect against a crash of the
//     process, not of the machine, and could lose a claim already reported to a provider);
//   - foreign_keys=ON: a secret cannot name an endpoint that does not exist;
//   - busy_timeout: a connection waits for a lock held by another process instead of failing at
//     once.
//
// Writes go through a single connection whose transactions begin IMMEDIATE, taking the write
// lock up front: writers of this process queue in Go, writers of other processes wait on the
// busy timeout, and no transaction fails halfway because it could not upgrade a read lock.
// Reads use a separate pool of read-only connections, which WAL lets run during a write.
//
// SQLite does not notice the database file or its write-ahead log being deleted or replaced
// while it has them open: its commits would go on succeeding into files gone at the next
// start. Nor the -shm file, the log's index, which also holds the locks that processes on the
// file take: one that opens the database after it was deleted makes a new one, and the two
// processes then write over each other's log frames and read pages the other is rewriting.
// Every write transaction checks first that the files at the paths are the ones open
// (checkFiles), and fails with ErrUnavailable if not; once the -shm went, reads do too (read).
//
// The file is created with mode 0600. Times are stored as INTEGER microseconds since the Unix
// epoch in UTC; durations as INTEGER milliseconds.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/hookverify/hookverify/storage"
)

// Options tune a store. The zero value selects the defaults.
type Options struct {
	// BusyTimeout is how long a statement waits for a lock held by another connection (another
	// process on the same file, typically) before failing with ErrUnavailable. Default 10s.
	BusyTimeout time.Duration
	// MaxReaders bounds the read-only connections. Default: GOMAXPROCS, at least 4.
	MaxReaders int
	// PageSize is the page size, in bytes, of a database file this store creates (a power of
	// two from 512 to 65536). An existing file keeps the page size it was created with.
	// Default DefaultPageSize.
	PageSize int
}

// DefaultBusyTimeout is the BusyTimeout used when Options leaves it zero.
const DefaultBusyTimeout = 10 * time.Second

// DefaultPageSize is the PageSize used when Options leaves it zero: 8 KiB rather than SQLite's
// 4 KiB. A 2 KiB delivery then shares its page with others instead of filling one alone, so a
// batch of new events writes fewer WAL frames, one system call each: 4-12 % more accepted
// deliveries per second on a new database in BENCHMARKS.md, where 16 KiB gained no more
// and would double what an ack, which changes one row, writes to the log.
const DefaultPageSize = 8192

// Store is a storage.Store on a SQLite database file. It is safe for concurrent use.
type Store struct {
	path    string
	writer  *sql.DB
	reader  *sql.DB
	closed  atomic.Bool
	claims  storage.ClaimBatcher
	acks    storage.Batcher[ackCall, struct{}]
	leases  storage.Batcher[leaseCall, storage.LeaseResult]
	stmts   *claimStmts
	lookups lookupStmts
	// writeStmts are the other write paths' prepared statements (Store.stmt).
	writeStmts stmtCache
	// turns orders the transactions waiting for the writer.
	turns writerTurns
	// files are the database file and its write-ahead log as this store opened them, and
	// pin the connection that keeps them open (see checkFiles).
	files storeFiles
	pin   *sql.DB
	// logRescued is set once a checkpoint has copied a deleted log's content into the
	// database file (rescueLog); rescuing is held by the one rescueLog trying.
	logRescued atomic.Bool
	rescuing   sync.Mutex
	// shmLost is set once the -shm was found deleted or replaced (rescueLogFor): from then on
	// nothing of this process checkpoints, and held keeps a read transaction open on the pin
	// for the process's life (holdFiles).
	shmLost atomic.Bool
	holding sync.Mutex
	held    *sql.Conn
	// shmReadCheck is when a read last looked at the -shm (read), in nanoseconds since start.
	shmReadCheck atomic.Int64
}

// shmReadCheckEvery bounds how often reads look at the -shm: a stat on every read cost the
// redelivery lookup a tenth of its time (BENCHMARKS.md). Writes look every time; a read
// within this of a deletion can still go by the stale index, but wrong pages need another
// process to have opened the database, written and restarted the log in that time too.
const shmReadCheckEvery = 50 * time.Millisecond

// started is the origin of shmReadCheck's clock (monotonic).
var started = time.Now()

var (
	_ storage.Store              = (*Store)(nil)
	_ storage.ClaimBatchReporter = (*Store)(nil)
	_ storage.InboxIDSource      = (*Store)(nil)
)

// Open opens the database file at path with the default options, creating it if needed, and
// migrates it to the current schema.
func Open(ctx context.Context, path string) (*Store, error) {
	return OpenWith(ctx, path, Options{})
}

// OpenWith is Open with options. Errors wrap storage.ErrUnavailable; the directory of path must
// exist.
func OpenWith(ctx context.Context, path string, opts Options) (*Store, error) {
	if path == "" || path == ":memory:" || strings.HasPrefix(path, "file:") {
		// An in-memory database would lose every claim on restart; a URI would bypass the
		// settings below.
		return nil, fmt.Errorf("sqlite: open %q: %w: want a file path", path, storage.ErrInvalid)
	}
	if opts.BusyTimeout <= 0 {
		opts.BusyTimeout = DefaultBusyTimeout
	}
	if opts.MaxReaders <= 0 {
		opts.MaxReaders = max(4, runtime.GOMAXPROCS(0))
	}
	if opts.PageSize == 0 {
		opts.PageSize = DefaultPageSize
	}
	if opts.PageSize < 512 || opts.PageSize > 65536 || opts.PageSize&(opts.PageSize-1) != 0 {
		return nil, fmt.Errorf("sqlite: open %s: %w: page size %d, want a power of two from 512 to 65536", path, storage.ErrInvalid, opts.PageSize)
	}
	// Create the file ourselves so that it is private: it holds sealed secrets and raw
	// deliveries. SQLite gives the -wal and -shm files the mode of the database file.
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w: %w", path, storage.ErrUnavailable, err)
	}
	info, err := f.Stat()
	if closeErr := f.Close(); err == nil {
		err = closeErr
	}
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w: %w", path, storage.ErrUnavailable, err)
	}
	if info.Size() == 0 {
		if err := initFile(ctx, path, opts); err != nil {
			return nil, err
		}
	}

	s := &Store{path: path, turns: writerTurns{patience: claimPatience}}
	s.leases.Limit = storage.MaxLeaseBatch
	if s.writer, err = sql.Open("sqlite", dsn(path, opts.BusyTimeout, writerConn)); err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w: %w", path, storage.ErrUnavailable, err)
	}
	// One writer connection: SQLite admits one writer at a time anyway, and queueing in Go
	// is cheaper and fairer than spinning on SQLITE_BUSY.
	s.writer.SetMaxOpenConns(1)
	s.writer.SetMaxIdleConns(1)
	s.writer.SetConnMaxLifetime(0)
	s.writer.SetConnMaxIdleTime(0)
	if err := s.checkJournalMode(ctx); err != nil {
		_ = s.writer.Close()
		return nil, err
	}
	if s.reader, err = sql.Open("sqlite", dsn(path, opts.BusyTimeout, readerConn)); err != nil {
		_ = s.writer.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w: %w", path, storage.ErrUnavailable, err)
	}
	s.reader.SetMaxOpenConns(opts.MaxReaders)
	s.reader.SetMaxIdleConns(opts.MaxReaders)
	if err := s.Migrate(ctx); err != nil {
		_ = s.Close()
		return nil, err
	}
	if err := s.recountPending(ctx); err != nil {
		_ = s.Close()
		return nil, err
	}
	if err := s.pinFiles(ctx); err != nil {
		_ = s.Close()
		return nil, err
	}
	if s.stmts, err = prepareClaimStmts(ctx, s.writer); err != nil {
		_ = s.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w: %w", path, storage.ErrUnavailable, err)
	}
	return s, nil
}

// initFile gives an empty database file its page size and WAL mode. SQLite fixes the page size
// when it first writes the file, which the journal_mode pragma of the writer's data source name
// would do with the default size: the driver runs those pragmas in name order, so page_size
// cannot simply go there too. If another process initialises the file first, the page_size
// statement here changes nothing and the file keeps that process's size.
func initFile(ctx context.Context, path string, opts Options) error {
	db, err := sql.Open("sqlite", dsn(path, opts.BusyTimeout, initConn))
	if err != nil {
		return fmt.Errorf("sqlite: open %s: %w: %w", path, storage.ErrUnavailable, err)
	}
	defer db.Close()
	// One connection for both statements: page_size applies to the connection that sets it.
	conn, err := db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("sqlite: open %s: %w: %w", path, storage.ErrUnavailable, err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, fmt.Sprintf("PRAGMA page_size = %d", opts.PageSize)); err != nil {
		return fmt.Errorf("sqlite: open %s: %w: %w", path, storage.ErrUnavailable, err)
	}
	// Several processes started at once on a new data directory all find the file empty and
	// come here. Switching to WAL takes the file for itself, and SQLite answers SQLITE_BUSY at
	// once, without waiting out the busy timeout, to the one that finds another switching it at
	// the same moment: Open failed. The other has then made the file WAL, or is about to, so
	// the statement is tried again for as long as the busy timeout allows.
	deadline := time.Now().Add(opts.BusyTimeout)
	for {
		_, err := conn.ExecContext(ctx, "PRAGMA journal_mode = WAL")
		if err == nil {
			break
		}
		if !isBusy(err) || time.Now().After(deadline) {
			return fmt.Errorf("sqlite: open %s: %w: %w", path, storage.ErrUnavailable, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("sqlite: open %s: %w: %w", path, storage.ErrUnavailable, ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
	if err := conn.Close(); err != nil {
		return fmt.Errorf("sqlite: open %s: %w: %w", path, storage.ErrUnavailable, err)
	}
	if err := db.Close(); err != nil {
		return fmt.Errorf("sqlite: open %s: %w: %w", path, storage.ErrUnavailable, err)
	}
	return nil
}

// isBusy reports SQLite's SQLITE_BUSY, with or without an extended code.
func isBusy(err error) bool {
	se, ok := errors.AsType[*sqlite.Error](err)
	return ok && se.Code()&0xff == sqlite3.SQLITE_BUSY
}

// connRole is what a connection is opened for.
type connRole int

const (
	readerConn connRole = iota // read-only pool
	writerConn                 // the single writer, WAL mode, IMMEDIATE transactions
	initConn                   // initFile's connection: sets nothing that writes the file
	// backupConn is Backup's: mode=ro, so that nothing can write the database nor create it,
	// and not the readers' query_only, which SQLite applies to VACUUM INTO's target too.
	backupConn
)

// dsn builds the driver's data source name. The path goes through a file: URI, escaped, so that
// no character of it can be read as a parameter.
func dsn(path string, busyTimeout time.Duration, role connRole) string {
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busyTimeout.Milliseconds()))
	q.Add("_pragma", "foreign_keys(1)")
	q.Add("_pragma", "synchronous(FULL)")
	// Deleted content (retention's swept deliveries, whose bodies may hold personal data) is
	// overwritten with zeros rather than left in freed cells and pages, where anyone reading
	// the file or a copy of it would find it. It costs writes of the pages a sweep frees.
	q.Add("_pragma", "secure_delete(1)")
	// mode=rw: a connection never creates the database (OpenWith does, private). One that
	// the pool opens after the file was deleted would otherwise create an empty one at the
	// path, with the default mode, and fail on its missing tables.
	q.Set("mode", "rw")
	switch role {
	case readerConn:
		q.Set("_query_only", "1")
	case writerConn:
		q.Add("_pragma", "journal_mode(WAL)")
		q.Set("_txlock", "immediate")
	case backupConn:
		q.Set("mode", "ro")
	}
	u := url.URL{Scheme: "file", OmitHost: true, Path: path, RawQuery: q.Encode()}
	if !strings.HasPrefix(path, "/") {
		// A relative path must stay opaque, or "file:" would swallow its first segment.
		u = url.URL{Scheme: "file", Opaque: (&url.URL{Path: path}).EscapedPath(), RawQuery: q.Encode()}
	}
	return u.String()
}

// checkJournalMode fails when WAL could not be enabled (some network file systems refuse
// it): the store would then silently run with different locking and durability.
func (s *Store) checkJournalMode(ctx context.Context) error {
	var mode string
	if err := s.writer.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		return fmt.Errorf("sqlite: open %s: %w: %w", s.path, storage.ErrUnavailable, err)
	}
	if !strings.EqualFold(mode, "wal") {
		return fmt.Errorf("sqlite: open %s: %w: journal mode is %q, not WAL", s.path, storage.ErrUnavailable, mode)
	}
	return nil
}

// Ping reads the database file, not just the connection, so that a lost or unreadable file
// is reported, and checks that it can still take writes (cannotWrite).
func (s *Store) Ping(ctx context.Context) error {
	if s.closed.Load() {
		return s.fail("ping", storage.ErrClosed)
	}
	var n int64
	if err := s.reader.QueryRowContext(ctx, "SELECT count(*) FROM schema_migrations").Scan(&n); err != nil {
		return s.fail("ping", unavailable(err))
	}
	if err := s.cannotWrite(); err != nil {
		return s.fail("ping", unavailable(err))
	}
	return nil
}

// cannotWrite says why the store's writes would fail now while its reads still answer, for the
// health check and the inbox monitor's read (InboxStats), whose answers health follows: the
// files deleted under it (SQLite keeps them open), or, without writing anything, a file system
// read-only or full (fsRefusesWrites: one statfs).
func (s *Store) cannotWrite() error {
	if err := s.filesGone(); err != nil {
		return err
	}
	return fsRefusesWrites(s.path)
}

// filesGone is checkFiles for a caller that does not hold the writer (a read, the health
// check): when the files are gone, it also copies what the open log holds into the database
// file at once, rather than at the next write, which may come too late: a process killed
// before it would take the deleted log's commits with it.
func (s *Store) filesGone() error {
	err := s.checkFiles()
	if err != nil {
		s.rescueLogFor(err)
	}
	return err
}

// rescueLogFor is rescueLog for checkFiles' error err, which needs it only when the database
// file or the log went. A deleted -shm alone loses nothing: the log at the path holds every
// commit, and the next start rebuilds the index from it. A checkpoint would then do harm, as it
// goes by this process's index: another process that opened the database since may have
// checkpointed and restarted the log, whose frames would be copied into the wrong pages.
//
// Once the -shm went, no rescue runs either when the log or the database file goes later if
// another process opened the database since: it may have checkpointed and restarted the log,
// and this one's index would copy stale pages over its commits. While no -shm is at the path,
// none did (any that opens the database makes one, and none can delete it again while this
// store holds the file: holdFiles), so this one's index is the log's only one and right, and
// the rescue runs: without it, what the deleted log held (claims answered ACCEPTED) would be
// gone at the next start.
func (s *Store) rescueLogFor(err error) {
	if fe, ok := errors.AsType[filesError](err); ok && fe.shmOnly {
		s.shmLost.Store(true)
		s.holdFiles()
		return
	}
	if s.shmLost.Load() {
		if _, err := os.Lstat(s.files.shmPath); !errors.Is(err, fs.ErrNotExist) {
			return
		}
	}
	s.rescueLog()
}

// holdFiles keeps a read transaction open on the pin, once the -shm went, and never ends it:
// a shared lock on the database file, which stops the last connection of any process from
// checkpointing the log and deleting it on close. This process's Close would do it by its
// stale index (copying log frames into the wrong pages), and another process's would delete
// the log under this one. Close leaves the pin open (what a kill would leave: the next start
// rebuilds the index from the log at the path).
func (s *Store) holdFiles() {
	s.holding.Lock()
	defer s.holding.Unlock()
	if s.held != nil || s.pin == nil {
		return
	}
	ctx := context.Background()
	conn, err := s.pin.Conn(ctx)
	if err != nil {
		return
	}
	var n int64
	if _, err := conn.ExecContext(ctx, "BEGIN"); err == nil {
		if err := conn.QueryRowContext(ctx, "SELECT count(*) FROM schema_migrations").Scan(&n); err == nil {
			s.held = conn
			return
		}
	}
	_ = conn.Close()
}

// rescueLog checkpoints the log the writer still has open, deleted or not, into the database
// file, once it has worked: after it no write commits (checkFiles), so nothing new reaches
// the log. The caller must not hold the writer.
//
// A checkpoint cannot pass a reader holding an older snapshot (a backup's long read, in
// another process): it then copies only the frames before that snapshot, waits out the busy
// timeout, and says so in its answer (busy), not as an error. That is no rescue (in
// TestLogRescueWaitsOutAnOldSnapshot the database file alone was then malformed), so it
// is tried again at the next look; one caller at a time waits, the others go on with the
// files' error.
func (s *Store) rescueLog() {
	if s.logRescued.Load() || !s.rescuing.TryLock() {
		return
	}
	defer s.rescuing.Unlock()
	var busy, frames, copied int64
	err := s.writer.QueryRowContext(context.Background(), "PRAGMA wal_checkpoint(FULL)").Scan(&busy, &frames, &copied)
	if err == nil && busy == 0 && frames == copied {
		s.logRescued.Store(true)
	}
}

// storeFiles identify the database file, its write-ahead log and the log's index (-shm) as
// the store opened them.
type storeFiles struct {
	db, wal, shm             os.FileInfo
	dbPath, walPath, shmPath string
}

// pinFiles notes which files the store's connections have open, and keeps one connection
// open for the store's life, so that SQLite never deletes and recreates the write-ahead log
// while the store is open (it does when the last connection to the database closes, and
// database/sql may close the writer and the readers): from then on a write-ahead log at the
// path that is not the noted one was deleted or replaced from outside (checkFiles).
func (s *Store) pinFiles(ctx context.Context) error {
	// SQLite opens the file a symbolic link leads to, and names the log after that file; an
	// absolute path keeps naming it if the working directory changes.
	dbPath, err := filepath.Abs(s.path)
	if err == nil {
		dbPath, err = filepath.EvalSymlinks(dbPath)
	}
	if err != nil {
		return fmt.Errorf("sqlite: open %s: %w: %w", s.path, storage.ErrUnavailable, err)
	}
	if s.pin, err = sql.Open("sqlite", dsn(s.path, DefaultBusyTimeout, readerConn)); err != nil {
		return fmt.Errorf("sqlite: open %s: %w: %w", s.path, storage.ErrUnavailable, err)
	}
	s.pin.SetMaxOpenConns(1)
	s.pin.SetMaxIdleConns(1)
	var n int64
	// A read opens the log, which stays open with the connection, idle in the pool.
	if err := s.pin.QueryRowContext(ctx, "SELECT count(*) FROM schema_migrations").Scan(&n); err != nil {
		return fmt.Errorf("sqlite: open %s: %w: %w", s.path, storage.ErrUnavailable, err)
	}
	s.files = storeFiles{dbPath: dbPath, walPath: dbPath + "-wal", shmPath: dbPath + "-shm"}
	if s.files.db, err = os.Stat(s.files.dbPath); err == nil {
		if s.files.wal, err = os.Stat(s.files.walPath); err == nil {
			s.files.shm, err = os.Stat(s.files.shmPath)
		}
	}
	if err != nil {
		return fmt.Errorf("sqlite: open %s: %w: %w", s.path, storage.ErrUnavailable, err)
	}
	return nil
}

// filesError is checkFiles' error. shmOnly: the database file and the log are the ones
// open, only the -shm is not.
type filesError struct {
	error
	shmOnly bool
}

func (e filesError) Unwrap() error { return e.error }

// checkFiles fails when the database file or its write-ahead log at their paths are not the
// files the store has open: deleted (by hand, or by a cleaner of old files) or replaced. SQLite
// does not notice in WAL mode: it keeps writing to the files it has open, every commit
// succeeds, and all of it, whatever was committed since the last checkpoint too, is gone at
// the next start. So no write may commit then (inWriteTxAs): ACCEPTED would be a promise the
// disk does not keep. The same for the -shm: this process's connections share the deleted
// file, but any other that opens the database (another instance, a token or endpoint command, a
// backup) makes a new one and so takes its locks where this one does not look: the two would
// write log frames over each other's, and a backup would read pages being rewritten. A failure
// to look (a permission, an I/O error) is no evidence: the writes themselves then report what
// is wrong.
func (s *Store) checkFiles() error {
	if s.files.db == nil {
		return nil // Open has not noted them yet: it is migrating the files it just opened
	}
	for _, f := range []struct {
		path string
		want os.FileInfo
		lost string
	}{
		{s.files.dbPath, s.files.db, "the deleted file held everything stored: restart from the latest backup"},
		{s.files.walPath, s.files.wal, "what was committed so far was copied into " + s.files.dbPath},
	} {
		info, err := os.Stat(f.path)
		if errors.Is(err, fs.ErrNotExist) || err == nil && !os.SameFile(info, f.want) {
			return filesError{error: fmt.Errorf("%s was deleted or replaced while in use: new commits would be lost at the next start, so writes are refused until hookverify is restarted (%s)", f.path, f.lost)}
		}
	}
	return s.checkShm()
}

// checkShm is checkFiles for the -shm alone. Once it was found lost, it stays lost (shmLost).
func (s *Store) checkShm() error {
	if s.files.shm == nil {
		return nil
	}
	if !s.shmLost.Load() {
		info, err := os.Stat(s.files.shmPath)
		if !errors.Is(err, fs.ErrNotExist) && (err != nil || os.SameFile(info, s.files.shm)) {
			return nil
		}
	}
	return filesError{error: fmt.Errorf("%s was deleted or replaced while in use: a process that opens the database now takes its locks in another file than this one, and the two would overwrite each other's commits, so writes and reads are refused until hookverify is restarted (nothing committed so far is lost: %s holds it)", s.files.shmPath, s.files.walPath), shmOnly: true}
}

// Close closes both connection pools. Later calls, Close included, return storage.ErrClosed.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return s.fail("close", storage.ErrClosed)
	}
	if err := s.checkFiles(); err != nil {
		s.rescueLogFor(err)
	}
	var errs []error
	if s.reader != nil {
		errs = append(errs, s.reader.Close())
	}
	if s.pin != nil && !s.shmLost.Load() {
		// After a lost -shm the pin stays open with the process (holdFiles).
		errs = append(errs, s.pin.Close())
	}
	if s.stmts != nil {
		s.stmts.close()
	}
	s.lookups.close()
	s.writeStmts.close()
	// The writer closes last: closing the last connection checkpoints the WAL into the file.
	errs = append(errs, s.writer.Close())
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("sqlite: close: %w", err)
	}
	return nil
}

// queryer is what reads need from *sql.DB and *sql.Tx.
type queryer interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// write runs fn in one IMMEDIATE transaction on the writer connection and commits it. A
// failure to begin or to commit wraps storage.ErrUnavailable; fn's errors are mapped by fail.
func (s *Store) write(ctx context.Context, op string, fn func(tx *sql.Tx) error) error {
	return s.fail(op, s.inWriteTx(ctx, fn))
}

// writeClaims is write for a claim batch, which takes turns with the other transactions
// rather than wait among them (see writerTurns).
func (s *Store) writeClaims(ctx context.Context, fn func(tx *sql.Tx) error) error {
	return s.fail("claim", s.inWriteTxAs(ctx, true, fn))
}

// inWriteTx is write without the mapping of its error (fail), for callers that map each
// outcome themselves.
func (s *Store) inWriteTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	return s.inWriteTxAs(ctx, false, fn)
}

// inWriteTxAs is inWriteTx for a claim batch (claims) or any other transaction, which take
// turns for the writer (writerTurns).
func (s *Store) inWriteTxAs(ctx context.Context, claims bool, fn func(tx *sql.Tx) error) error {
	if s.closed.Load() {
		return storage.ErrClosed
	}
	if err := s.turns.acquire(ctx, claims); err != nil {
		return unavailable(err)
	}
	defer s.turns.release()
	if err := s.checkFiles(); err != nil {
		// Checked before writing too: a transaction larger than the page cache writes log
		// frames before it commits, which after a deleted -shm may overwrite another
		// process's commits.
		s.rescueLogFor(err)
		return unavailable(err)
	}
	tx, err := s.writer.BeginTx(ctx, nil)
	if err != nil {
		return unavailable(err)
	}
	defer func() { _ = tx.Rollback() }()
	if err := fn(tx); err != nil {
		return err
	}
	if err := s.checkFiles(); err != nil {
		// The connection still has the deleted log open: a checkpoint copies what was
		// committed to it (and answered as done) into the database file, for the restart.
		_ = tx.Rollback()
		s.rescueLogFor(err)
		return unavailable(err)
	}
	if err := tx.Commit(); err != nil {
		return unavailable(err)
	}
	return nil
}

// read runs fn against the read-only pool.
//
// Not once the -shm was lost (checkShm): the reads go by this process's stale index, while
// another process that opened the database since keeps its own, checkpoints into the database
// file and restarts the log, writing its frames where the stale index finds this process's
// pages. What they read then is another state or other pages (a delivery stored reads as not
// found, a count as any number), so it is refused. The -shm is looked at after fn, as it may
// go while fn reads, at most every shmReadCheckEvery; before, only a loss already known is.
func (s *Store) read(op string, fn func(q queryer) error) error {
	if s.closed.Load() {
		return s.fail(op, storage.ErrClosed)
	}
	if s.shmLost.Load() {
		return s.fail(op, unavailable(s.checkShm()))
	}
	err := fn(s.reader)
	now := int64(time.Since(started))
	if last := s.shmReadCheck.Load(); now-last >= int64(shmReadCheckEvery) && s.shmReadCheck.CompareAndSwap(last, now) {
		if lost := s.checkShm(); lost != nil {
			s.rescueLogFor(lost)
			return s.fail(op, unavailable(lost))
		}
	}
	return s.fail(op, err)
}

// unavailableError marks a failure that is ErrUnavailable whatever the driver said, such as a
// failed commit.
type unavailableError struct{ err error }

func (e unavailableError) Error() string { return e.err.Error() }
func (e unavailableError) Unwrap() error { return e.err }

func unavailable(err error) error { return unavailableError{err} }

// sentinels are the errors that fail passes on as they are. ErrUnreadable is one: a record
// that cannot be read back fails every retry, so it is no ErrUnavailable (storage/crdb
// answers it alike).
var sentinels = []error{
	storage.ErrClosed, storage.ErrNotFound, storage.ErrAlreadyExists, storage.ErrInvalid, storage.ErrUnavailable,
	storage.ErrLeaseLost, storage.ErrUnreadable,
}

// fail maps err to the storage sentinels, in one place: constraint violations become
// ErrAlreadyExists or ErrNotFound as the contract names them, anything that happens after
// Close becomes ErrClosed, and every other failure, being one of reaching the database or
// committing, becomes ErrUnavailable.
func (s *Store) fail(op string, err error) error {
	if err == nil {
		return nil
	}
	if _, done := errors.AsType[failedError](err); done {
		// Already classified and prefixed (a claim batch's failure, handed to each caller).
		return err
	}
	return failedError{s.classify(op, err)}
}

// failedError marks an error fail made.
type failedError struct{ error }

func (e failedError) Unwrap() error { return e.error }

// classify is fail's work: the storage error that err is, prefixed with the operation.
func (s *Store) classify(op string, err error) error {
	prefix := "sqlite: " + op
	if s.closed.Load() && !errors.Is(err, storage.ErrClosed) {
		// database/sql reports a closed pool with an unexported error.
		return fmt.Errorf("%s: %w: %w", prefix, storage.ErrClosed, err)
	}
	if _, forced := errors.AsType[unavailableError](err); !forced {
		for _, sentinel := range sentinels {
			if errors.Is(err, sentinel) {
				return fmt.Errorf("%s: %w", prefix, err)
			}
		}
		if se, ok := errors.AsType[*sqlite.Error](err); ok {
			switch code := se.Code(); {
			case code == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY || code == sqlite3.SQLITE_CONSTRAINT_UNIQUE:
				return fmt.Errorf("%s: %w: %w", prefix, storage.ErrAlreadyExists, err)
			case code == sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY:
				return fmt.Errorf("%s: %w: %w", prefix, storage.ErrNotFound, err)
			case code&0xff == sqlite3.SQLITE_CONSTRAINT:
				return fmt.Errorf("%s: %w: %w", prefix, storage.ErrInvalid, err)
			}
		}
	}
	if _, known := errors.AsType[filesError](err); !known {
		if lost := s.checkFiles(); lost != nil {
			// Whatever the driver said (no such table, unable to open), this is why.
			return fmt.Errorf("%s: %w: %w: %w", prefix, storage.ErrUnavailable, lost, err)
		}
	}
	return fmt.Errorf("%s: %w: %w", prefix, storage.ErrUnavailable, err)
}

// micros encodes a time for a NOT NULL column. The zero time round-trips too.
func micros(t time.Time) int64 { return t.UnixMicro() }

// nullMicros encodes a time for a nullable column, where NULL means the zero time.
func nullMicros(t time.Time) sql.NullInt64 {
	if t.IsZero() {
		return sql.NullInt64{}
	}
	return sql.NullInt64{Int64: t.UnixMicro(), Valid: true}
}

func fromMicros(v int64) time.Time { return time.UnixMicro(v).UTC() }

func fromNullMicros(v sql.NullInt64) time.Time {
	if !v.Valid {
		return time.Time{}
	}
	return fromMicros(v.Int64)
}

// nonNil keeps an empty byte slice from being bound as NULL.
func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}
