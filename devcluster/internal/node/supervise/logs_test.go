package supervise

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

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
		rc, err := OpenLogStream(context.Background(), LogRequest{Path: path, Tail: tc.n, Finished: Exited})
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
	rc, _ := OpenLogStream(context.Background(), LogRequest{Path: path, Limit: 3, Finished: Exited})
	b, _ := io.ReadAll(rc)
	rc.Close()
	if string(b) != "1\n2" {
		t.Errorf("limitBytes: %q", b)
	}
	if got := TailText(path, 2, 3); got != "\n3\n" {
		t.Errorf("TailText = %q", got)
	}
}

func TestFollowStopsWhenContainerExits(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	w, err := OpenLogForAppend(path)
	if err != nil {
		t.Fatal(err)
	}
	finished := make(chan struct{})
	rc, err := OpenLogStream(context.Background(), LogRequest{Path: path, Follow: true, Finished: finished})
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
	if got := ReadTerminationMessage(inside, state); got != "result" {
		t.Errorf("inside state dir: %q", got)
	}
	outside := filepath.Join(t.TempDir(), "msg")
	_ = os.WriteFile(outside, []byte("secret"), 0o644)
	if got := ReadTerminationMessage(outside, state); got != "" {
		t.Errorf("outside state dir must not be read: %q", got)
	}
	if got := ReadTerminationMessage(filepath.Join(state, "..", filepath.Base(filepath.Dir(outside)), "msg"), state); got != "" {
		t.Errorf("escaping with ..: %q", got)
	}
}

func TestLogInstances(t *testing.T) {
	dir := t.TempDir()
	for _, inst := range []int32{2, 0, 10} {
		f, err := OpenLogForAppend(LogPath(dir, "c", inst))
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	_ = os.WriteFile(filepath.Join(dir, "logs", "c", "notes.log"), nil, 0o644)
	if got := LogInstances(dir, "c"); len(got) != 3 || got[0] != 0 || got[1] != 2 || got[2] != 10 {
		t.Errorf("LogInstances = %v, want [0 2 10]", got)
	}
	if got := LogInstances(dir, "other"); len(got) != 0 {
		t.Errorf("no logs: %v", got)
	}
}
