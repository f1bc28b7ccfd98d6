package node

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func startSh(t *testing.T, script string) (*proc, string) {
	t.Helper()
	dir := t.TempDir()
	logFile := filepath.Join(dir, "out.log")
	out, err := openLogForAppend(logFile)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	p, err := startProc([]string{"sh", "-c", script}, dir, []string{"PATH=" + os.Getenv("PATH")}, out)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.terminate(time.Second) })
	return p, logFile
}

func waitDone(t *testing.T, p *proc) {
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
	if p.exitCode != 3 || p.signal != 0 {
		t.Errorf("exit %d signal %d, want 3", p.exitCode, p.signal)
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
	if p.exitCode != 137 || p.signal != int(syscall.SIGKILL) {
		t.Errorf("exit %d signal %d, want 137/9", p.exitCode, p.signal)
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

func TestTailOffset(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		content string
		n       int
		want    string
	}{
		{"a\nb\nc\n", 2, "b\nc\n"},
		{"a\nb\nc", 2, "b\nc"},
		{"a\nb\nc\n", 5, "a\nb\nc\n"},
		{"a\nb\nc\n", 0, "a\nb\nc\n"},
		{"", 3, ""},
		{strings.Repeat("x", 70000) + "\nlast\n", 1, "last\n"},
	} {
		path := filepath.Join(dir, "f")
		if err := os.WriteFile(path, []byte(tc.content), 0o644); err != nil {
			t.Fatal(err)
		}
		rc, err := openLogStream(context.Background(), logRequest{path: path, tail: tc.n, finished: closedChan})
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(rc)
		rc.Close()
		if string(b) != tc.want {
			t.Errorf("tail %d of %q = %q, want %q", tc.n, tc.content[:min(len(tc.content), 20)], b, tc.want)
		}
	}
	path := filepath.Join(dir, "f")
	_ = os.WriteFile(path, []byte("1\n2\n3\n"), 0o644)
	rc, _ := openLogStream(context.Background(), logRequest{path: path, limit: 3, finished: closedChan})
	b, _ := io.ReadAll(rc)
	rc.Close()
	if string(b) != "1\n2" {
		t.Errorf("limitBytes: %q", b)
	}
	if got := tailText(path, 2, 3); got != "\n3\n" {
		t.Errorf("tailText = %q", got)
	}
}

func TestFollowStopsWhenContainerExits(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	w, err := openLogForAppend(path)
	if err != nil {
		t.Fatal(err)
	}
	finished := make(chan struct{})
	rc, err := openLogStream(context.Background(), logRequest{path: path, follow: true, finished: finished})
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	go func() {
		_, _ = w.WriteString("one\n")
		time.Sleep(150 * time.Millisecond)
		_, _ = w.WriteString("two\n")
		w.Close()
		close(finished)
	}()
	got := make(chan string, 1)
	go func() {
		b, _ := io.ReadAll(rc)
		got <- string(b)
	}()
	select {
	case s := <-got:
		if s != "one\ntwo\n" {
			t.Errorf("followed %q", s)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("follow did not end after the container exited")
	}
}

func TestReadTerminationMessage(t *testing.T) {
	state := t.TempDir()
	inside := filepath.Join(state, "pods", "msg")
	_ = os.MkdirAll(filepath.Dir(inside), 0o755)
	_ = os.WriteFile(inside, []byte("result"), 0o644)
	if got := readTerminationMessage(inside, state); got != "result" {
		t.Errorf("inside state dir: %q", got)
	}
	outside := filepath.Join(t.TempDir(), "msg")
	_ = os.WriteFile(outside, []byte("secret"), 0o644)
	if got := readTerminationMessage(outside, state); got != "" {
		t.Errorf("outside state dir must not be read: %q", got)
	}
	if got := readTerminationMessage(filepath.Join(state, "..", filepath.Base(filepath.Dir(outside)), "msg"), state); got != "" {
		t.Errorf("escaping with ..: %q", got)
	}
}
