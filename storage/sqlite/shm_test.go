package sqlite

import (
	"bufio"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/hookverify/hookverify/storage"
)

// shmChildEnv names the database a child process of TestShmChildProcess writes to.
const shmChildEnv = "HOOKVERIFY_SHM_CHILD"

// TestShmChildProcess is not a test: it is the second process of the -shm tests, run with
// shmChildEnv set to "path from count [checkpoint]". It opens the store at path as another
// hookverify command would and claims count events of 3000 bytes from evt-<from>, printing
// each one accepted; with checkpoint 1 it then checkpoints the whole log (as the automatic
// checkpoint does after enough commits) and claims count more, which restart the log from its
// first frame.
func TestShmChildProcess(t *testing.T) {
	spec := strings.Fields(os.Getenv(shmChildEnv))
	if len(spec) == 0 {
		t.Skip("the second process of the -shm tests")
	}
	var path string
	var from, count, checkpoint int
	if _, err := fmt.Sscan(strings.Join(append(spec, "0"), " "), &path, &from, &count, &checkpoint); err != nil {
		t.Fatal(err)
	}
	s, err := Open(t.Context(), path)
	if err != nil {
		fmt.Println("open:", err)
		return
	}
	defer s.Close()
	claim := func(i int) {
		if r, err := s.Claim(t.Context(), deliveryOfSize(i, 3000)); err == nil && r.Accepted {
			fmt.Println("accepted", i)
		} else {
			fmt.Println("claim", i, err)
		}
	}
	for i := from; i < from+count; i++ {
		claim(i)
	}
	if checkpoint == 0 {
		return
	}
	var busy, frames, copied int64
	if err := s.writer.QueryRowContext(t.Context(), "PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &frames, &copied); err != nil {
		fmt.Println("checkpoint:", err)
	}
	for i := from + count; i < from+2*count; i++ {
		claim(i)
	}
}

// runShmChild runs TestShmChildProcess on path (count claims from evt-<from>, checkpointing
// and claiming count more if checkpoint) and returns the events it accepted.
func runShmChild(t *testing.T, path string, from, count int, checkpoint bool) []int {
	t.Helper()
	mode := 0
	if checkpoint {
		mode = 1
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestShmChildProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s %d %d %d", shmChildEnv, path, from, count, mode))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v: %s", err, out)
	}
	var accepted []int
	for _, line := range strings.Split(string(out), "\n") {
		var i int
		if _, err := fmt.Sscanf(line, "accepted %d", &i); err == nil {
			accepted = append(accepted, i)
		} else if line != "" && line != "PASS" {
			t.Log("child:", line)
		}
	}
	return accepted
}

// TestDeletedShmThenAnotherProcessWrites: the -shm file (SQLite's wal-index, which also holds
// the WAL's locks) is deleted while the store runs; another process then opens the database (a
// second instance, a token or endpoint command): it creates a new -shm, so the two processes
// lock different files. Every claim either accepted must be in the database afterwards, and the
// database must be sound.
func TestDeletedShmThenAnotherProcessWrites(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hookverify.db")
	s, err := Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	createStripeEndpoint(t, s, "ep-1")
	accepted := map[int]bool{}
	for i := range 20 {
		if r, err := s.Claim(t.Context(), deliveryOfSize(i, 3000)); err != nil || !r.Accepted {
			t.Fatal(r, err)
		}
		accepted[i] = true
	}
	if err := os.Remove(path + "-shm"); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	wg.Go(func() {
		cmd := exec.Command(os.Args[0], "-test.run=^TestShmChildProcess$", "-test.count=1")
		cmd.Env = append(os.Environ(), shmChildEnv+"="+path+" 1000 300")
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Error(err)
			return
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Error(err)
			return
		}
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			var i int
			if _, err := fmt.Sscanf(sc.Text(), "accepted %d", &i); err == nil {
				mu.Lock()
				accepted[i] = true
				mu.Unlock()
			} else {
				t.Log("child:", sc.Text())
			}
		}
		_ = cmd.Wait()
	})
	refused := 0
	for i := 100; i < 400; i++ {
		r, err := s.Claim(t.Context(), deliveryOfSize(i, 3000))
		if err == nil && r.Accepted {
			mu.Lock()
			accepted[i] = true
			mu.Unlock()
		} else if errors.Is(err, storage.ErrUnavailable) {
			if refused == 0 {
				t.Logf("first refusal, claim %d: %v", i, err)
			}
			refused++
		} else {
			t.Logf("claim %d: %+v %v", i, r, err)
		}
	}
	wg.Wait()
	t.Logf("accepted %d, refused %d by this process", len(accepted), refused)
	_ = s.Close()
	checkAsNextStartFindsIt(t, path, accepted)
}

// checkAsNextStartFindsIt opens the database at path as the next start would find it (a copy of the
// database file and its log, in a new directory: this process may still hold the files, and
// with them the index of the -shm it had), runs integrity_check and looks up every claim in
// accepted.
func checkAsNextStartFindsIt(t *testing.T, path string, accepted map[int]bool) {
	t.Helper()
	copied := filepath.Join(t.TempDir(), "hookverify.db")
	for _, suffix := range []string{"", "-wal"} {
		b, err := os.ReadFile(path + suffix)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(copied+suffix, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	db, err := sql.Open("sqlite", dsn(copied, DefaultBusyTimeout, writerConn))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.QueryContext(t.Context(), "PRAGMA integrity_check")
	if err != nil {
		t.Fatalf("integrity_check: %v", err)
	}
	var problems []string
	for rows.Next() {
		var line string
		_ = rows.Scan(&line)
		if line != "ok" {
			problems = append(problems, line)
		}
	}
	if err := rows.Err(); err != nil {
		problems = append(problems, err.Error())
	}
	rows.Close()
	if len(problems) > 0 {
		t.Errorf("integrity_check after reopening: %d problems, first %q", len(problems), problems[0])
	}
	missing := 0
	for i := range accepted {
		var n int
		if err := db.QueryRowContext(t.Context(), "SELECT count(*) FROM claims WHERE event_id = ?", "evt-"+strconv.Itoa(i)).Scan(&n); err != nil || n != 1 {
			missing++
		}
	}
	var total int
	_ = db.QueryRowContext(t.Context(), "SELECT count(*) FROM claims").Scan(&total)
	if missing > 0 {
		t.Errorf("%d of %d accepted claims missing after reopening (%d claims in the database)", missing, len(accepted), total)
	}
}

// shmReaderEnv names the database a child process of TestShmReaderProcess reads.
const shmReaderEnv = "HOOKVERIFY_SHM_READER"

// TestShmReaderProcess is not a test: it is the second process of
// TestDeletedShmThenABackupReads, run with shmReaderEnv set to "path out". Like a backup, it
// opens the database read-only and reads in one transaction: it counts the claims, says
// "ready", waits for a line on its standard input, then runs integrity_check, counts again and
// writes VACUUM INTO out, all in the same snapshot.
func TestShmReaderProcess(t *testing.T) {
	spec := os.Getenv(shmReaderEnv)
	if spec == "" {
		t.Skip("the second process of TestDeletedShmThenABackupReads")
	}
	db, err := sql.Open("sqlite", dsn(spec, DefaultBusyTimeout, backupConn))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tx, err := db.BeginTx(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	var n int
	if err := tx.QueryRowContext(t.Context(), "SELECT count(*) FROM claims").Scan(&n); err != nil {
		t.Fatal(err)
	}
	fmt.Println("ready", n)
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
	rows, err := tx.QueryContext(t.Context(), "PRAGMA integrity_check")
	if err != nil {
		fmt.Println("integrity", err)
	} else {
		for rows.Next() {
			var line string
			_ = rows.Scan(&line)
			fmt.Printf("integrity %q\n", line)
		}
		if err := rows.Err(); err != nil {
			fmt.Println("integrity", err)
		}
		rows.Close()
	}
	if err := tx.QueryRowContext(t.Context(), "SELECT count(*) FROM claims").Scan(&n); err != nil {
		fmt.Println("count", err)
	} else {
		fmt.Println("count", n)
	}
}

// TestDeletedShmThenABackupReads: the -shm file is deleted while the store runs, and a backup
// (another process) then reads in one snapshot while the store goes on. The backup's new -shm
// holds its read lock where the store does not look, so nothing may overwrite the pages and log
// frames its snapshot reads: what it reads must be sound and the same throughout.
func TestDeletedShmThenABackupReads(t *testing.T) {
	s, path, _ := storeWithClaims(t, 0)
	// Checkpoints every few commits rather than every 1000 pages: the same checkpoints and
	// restarts of the log as under a steady load, sooner.
	if _, err := s.writer.ExecContext(t.Context(), "PRAGMA wal_autocheckpoint = 20"); err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		if r, err := s.Claim(t.Context(), deliveryOfSize(i, 3000)); err != nil || !r.Accepted {
			t.Fatal(r, err)
		}
	}
	if err := os.Remove(path + "-shm"); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestShmReaderProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), shmReaderEnv+"="+path)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stdout)
	var before int
	for sc.Scan() {
		if _, err := fmt.Sscanf(sc.Text(), "ready %d", &before); err == nil {
			break
		}
		t.Log("reader:", sc.Text())
	}
	refused := 0
	for i := 100; i < 400; i++ {
		if _, err := s.Claim(t.Context(), deliveryOfSize(i, 3000)); err != nil {
			refused++
		}
	}
	_, _ = stdin.Write([]byte("go\n"))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == `integrity "ok"` || line == "PASS":
		case line == fmt.Sprint("count ", before):
		default:
			t.Errorf("reader, whose snapshot held %d claims: %.300s", before, line)
		}
	}
	_ = cmd.Wait()
	t.Logf("snapshot of %d claims; %d claims refused meanwhile", before, refused)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	checkAsNextStartFindsIt(t, path, nil)
}

// TestDeletedShmAlone: the -shm file deleted under a store that no other process opens. This
// process's connections share the deleted file's mapping, so by itself the deletion loses
// nothing; but no process can tell that no other will open the database meanwhile (which
// creates a new -shm: TestDeletedShmThenAnotherProcessWrites), so writes are refused as for a
// deleted log, and the health check says so, naming the file. Everything accepted before is
// there after a restart, and a restart accepts again.
func TestDeletedShmAlone(t *testing.T) {
	s, path, accepted := storeWithClaims(t, 30)
	if err := os.Remove(path + "-shm"); err != nil {
		t.Fatal(err)
	}
	if r, err := s.Claim(t.Context(), deliveryOfSize(100, 3000)); !errors.Is(err, storage.ErrUnavailable) || !strings.Contains(fmt.Sprint(err), path+"-shm") {
		t.Errorf("claim after the -shm was deleted = %+v, %v; want ErrUnavailable naming %s", r, err, path+"-shm")
	}
	if err := s.Ping(t.Context()); !errors.Is(err, storage.ErrUnavailable) {
		t.Errorf("Ping after the -shm was deleted = %v, want ErrUnavailable", err)
	}
	if _, err := s.LookupClaim(t.Context(), "ep-1", "evt-1"); !errors.Is(err, storage.ErrUnavailable) {
		t.Errorf("LookupClaim after the -shm was deleted = %v, want ErrUnavailable", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	checkAsNextStartFindsIt(t, path, accepted)
	// A restart is another process: it makes a new -shm, and writes.
	cmd := exec.Command(os.Args[0], "-test.run=^TestShmChildProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), shmChildEnv+"="+path+" 1000 1")
	out, err := cmd.CombinedOutput()
	if !strings.Contains(string(out), "accepted 1000") {
		t.Fatalf("a claim after the restart: %s, %v; want accepted", out, err)
	}
	accepted[1000] = true
	checkAsNextStartFindsIt(t, path, accepted)
}

// TestDeletedShmThenAnotherProcessWritesAndExits: as TestDeletedShmThenAnotherProcessWrites,
// but the other process writes and exits before this store next looks at its files.
func TestDeletedShmThenAnotherProcessWritesAndExits(t *testing.T) {
	s, path, accepted := storeWithClaims(t, 20)
	if err := os.Remove(path + "-shm"); err != nil {
		t.Fatal(err)
	}
	for _, i := range runShmChild(t, path, 1000, 300, false) {
		accepted[i] = true
	}
	t.Logf("the other process accepted %d", len(accepted)-20)
	for _, f := range []string{"-wal", "-shm"} {
		if _, err := os.Stat(path + f); err != nil {
			t.Logf("after the other process: %v", err)
		}
	}
	for i := 100; i < 110; i++ {
		if r, err := s.Claim(t.Context(), deliveryOfSize(i, 3000)); err == nil && r.Accepted {
			accepted[i] = true
		}
	}
	_ = s.Ping(t.Context())
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	checkAsNextStartFindsIt(t, path, accepted)
}

// TestDeletedShmThenABigTransaction: after the -shm was deleted and another process committed,
// a transaction larger than this store's page cache writes log frames before its commit, by
// this process's stale index: at the start of a log it has checkpointed, over the other
// process's commits. It must be refused before it writes anything.
func TestDeletedShmThenABigTransaction(t *testing.T) {
	s, path, accepted := storeWithClaims(t, 20)
	// What the automatic checkpoint does after enough commits: the whole log copied.
	if _, err := s.writer.ExecContext(t.Context(), "PRAGMA wal_checkpoint(PASSIVE)"); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(path + "-shm"); err != nil {
		t.Fatal(err)
	}
	for _, i := range runShmChild(t, path, 1000, 5, false) {
		accepted[i] = true
	}
	if len(accepted) != 25 {
		t.Fatalf("the other process accepted %d of 5", len(accepted)-20)
	}
	if r, err := s.Claim(t.Context(), deliveryOfSize(100, 6<<20)); !errors.Is(err, storage.ErrUnavailable) {
		t.Errorf("a big claim after the -shm was deleted = %+v, %v; want ErrUnavailable", r, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	checkAsNextStartFindsIt(t, path, accepted)
}

// storeWithClaims opens a store in a new directory (closed at the test's end), with endpoint
// ep-1 and n claims of 3000 bytes accepted (evt-0 on), which accepted holds.
func storeWithClaims(t *testing.T, n int) (s *Store, path string, accepted map[int]bool) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "hookverify.db")
	s, err := Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	createStripeEndpoint(t, s, "ep-1")
	accepted = map[int]bool{}
	for i := range n {
		if r, err := s.Claim(t.Context(), deliveryOfSize(i, 3000)); err != nil || !r.Accepted {
			t.Fatal(r, err)
		}
		accepted[i] = true
	}
	return s, path, accepted
}
