package supervise

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

func startSh(t *testing.T, script string) (*Proc, string) {
	t.Helper()
	dir := t.TempDir()
	logFile := filepath.Join(dir, "out.log")
	out, err := OpenLogForAppend(logFile)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	p, err := Start([]string{"sh", "-c", script}, dir, []string{"PATH=" + os.Getenv("PATH")}, out)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.terminate(time.Second) })
	return p, logFile
}

func waitDone(t *testing.T, p *Proc) {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		t.Fatal("process did not exit")
	}
}

func TestProcExitCodeAndOutput(t *testing.T) {
	p, logFile := startSh(t, "echo out; echo err >&2; exit 3")
	waitDone(t, p)
	if p.ExitCode != 3 || p.Signal != 0 {
		t.Errorf("exit %d signal %d, want 3", p.ExitCode, p.Signal)
	}
	b, _ := os.ReadFile(logFile)
	if string(b) != "out\nerr\n" {
		t.Errorf("log = %q", b)
	}
}

func TestProcTerminateKillsGroup(t *testing.T) {
	// The child ignores SIGTERM: the group must be SIGKILLed after grace,
	// background grandchildren included.
	p, logFile := startSh(t, "trap '' TERM; sleep 60 & echo $!; wait")
	var child int
	for i := 0; i < 100 && child == 0; i++ {
		b, _ := os.ReadFile(logFile)
		child, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		time.Sleep(20 * time.Millisecond)
	}
	if child == 0 {
		t.Fatal("no child pid")
	}
	start := time.Now()
	p.terminate(300 * time.Millisecond)
	if d := time.Since(start); d < 250*time.Millisecond {
		t.Errorf("SIGKILL came before the grace period: %v", d)
	}
	if p.ExitCode != 137 || p.Signal != int(syscall.SIGKILL) {
		t.Errorf("exit %d signal %d, want 137/9", p.ExitCode, p.Signal)
	}
	if alive(child) {
		t.Errorf("grandchild %d survived", child)
	}
}

func TestProcExitKillsLeftovers(t *testing.T) {
	// A container is over when its main process is: leftovers go too.
	p, logFile := startSh(t, "sleep 60 & echo $!")
	waitDone(t, p)
	b, _ := os.ReadFile(logFile)
	child, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if child == 0 || alive(child) {
		t.Errorf("background child %d survived its container", child)
	}
}

// alive reports whether pid still runs a while later; a zombie (killed,
// waiting for whoever adopted it to reap it) does not count.
func alive(pid int) bool {
	time.Sleep(100 * time.Millisecond)
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return len(f) > 0 && f[0] != "Z"
}

func TestLookPath(t *testing.T) {
	dir := t.TempDir()
	prog := filepath.Join(dir, "prog")
	if err := os.WriteFile(prog, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got, err := lookPath("prog", "/", []string{"PATH=/nonexistent:" + dir}); err != nil || got != prog {
		t.Errorf("lookPath = %q, %v", got, err)
	}
	if got, err := lookPath("./prog", dir, nil); err != nil || got != prog {
		t.Errorf("relative path: %q, %v", got, err)
	}
	if _, err := lookPath("prog", "/", []string{"PATH=/nonexistent"}); err == nil || !strings.Contains(err.Error(), "not found in $PATH") {
		t.Errorf("missing program: %v", err)
	}
}

func TestProcKillFollowsAMovingDeadline(t *testing.T) {
	// SIGTERM is ignored; the deadline starts far off and is then brought
	// forward, as a forced deletion does after a graceful one.
	p, logFile := startSh(t, "trap '' TERM; echo ready; while :; do sleep 0.05; done")
	for i := 0; i < 100 && !strings.Contains(readFile(logFile), "ready"); i++ {
		time.Sleep(20 * time.Millisecond)
	}
	start := time.Now()
	var mu sync.Mutex
	deadline := start.Add(time.Hour)
	time.AfterFunc(200*time.Millisecond, func() {
		mu.Lock()
		deadline = time.Now()
		mu.Unlock()
	})
	p.Kill(func() time.Time { mu.Lock(); defer mu.Unlock(); return deadline })
	if d := time.Since(start); d < 150*time.Millisecond || d > 5*time.Second {
		t.Errorf("killed after %v, want soon after the deadline moved (200ms)", d)
	}
	if p.ExitCode != 137 || p.Signal != int(syscall.SIGKILL) {
		t.Errorf("exit %d signal %d, want 137/9", p.ExitCode, p.Signal)
	}
}

func readFile(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}
