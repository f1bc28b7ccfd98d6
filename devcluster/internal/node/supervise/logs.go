package supervise

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Each container instance writes stdout and stderr to
// <podDir>/logs/<container>/<restartCount>.log, kept after it exits, so the
// current and the previous instance can both be read, as from a kubelet.
func LogPath(podDir, container string, instance int32) string {
	return filepath.Join(podDir, "logs", container, strconv.Itoa(int(instance))+".log")
}

// LogInstances lists, in ascending order, the instances of a container
// that have a log under podDir.
func LogInstances(podDir, container string) []int {
	files, _ := filepath.Glob(filepath.Join(podDir, "logs", container, "*.log"))
	var insts []int
	for _, f := range files {
		if n, err := strconv.Atoi(strings.TrimSuffix(filepath.Base(f), ".log")); err == nil {
			insts = append(insts, n)
		}
	}
	sort.Ints(insts)
	return insts
}

// OpenLogForAppend opens (creating it and its directory) the log a new
// instance writes to.
func OpenLogForAppend(path string) (*os.File, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	return os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
}

// tailOffset returns the offset where the last n lines of f start (a final
// line without newline counts as a line).
func tailOffset(f *os.File, n int) (int64, error) {
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	end := st.Size()
	if n <= 0 || end == 0 {
		return 0, nil
	}
	const chunk = 32 << 10
	buf := make([]byte, chunk)
	pos := end
	newlines := 0
	first := true
	for pos > 0 {
		size := int64(chunk)
		if pos < size {
			size = pos
		}
		pos -= size
		if _, err := f.ReadAt(buf[:size], pos); err != nil && !errors.Is(err, io.EOF) {
			return 0, err
		}
		b := buf[:size]
		if first && b[len(b)-1] == '\n' {
			b = b[:len(b)-1] // the newline ending the last line
		}
		first = false
		for i := len(b) - 1; i >= 0; i-- {
			if b[i] == '\n' {
				newlines++
				if newlines == n {
					return pos + int64(i) + 1, nil
				}
			}
		}
	}
	return 0, nil
}

// TailText returns at most maxLines lines and maxBytes bytes from the end
// of a file, for terminationMessagePolicy FallbackToLogsOnError.
func TailText(path string, maxLines, maxBytes int) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	off, err := tailOffset(f, maxLines)
	if err != nil {
		return ""
	}
	if st, err := f.Stat(); err == nil && st.Size()-off > int64(maxBytes) {
		off = st.Size() - int64(maxBytes)
	}
	b, err := io.ReadAll(io.NewSectionReader(f, off, 1<<62))
	if err != nil {
		return ""
	}
	return string(b)
}

// LogRequest is what GetContainerLogs needs to serve one instance's log.
type LogRequest struct {
	Path     string
	Tail     int             // last lines only, if > 0
	Limit    int             // bytes at most, if > 0
	Follow   bool            // keep reading what the instance writes
	Finished <-chan struct{} // closed when the instance has exited
}

// Exited is a Finished channel for an instance that has already exited.
var Exited <-chan struct{} = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// OpenLogStream opens a log for serving. With Follow, reading blocks at end
// of file until more is written or the instance exits.
func OpenLogStream(ctx context.Context, req LogRequest) (io.ReadCloser, error) {
	f, err := os.Open(req.Path)
	if err != nil {
		return nil, err
	}
	off, err := tailOffset(f, req.Tail)
	if err != nil {
		f.Close()
		return nil, err
	}
	if _, err := f.Seek(off, io.SeekStart); err != nil {
		f.Close()
		return nil, err
	}
	var r io.Reader = f
	if req.Follow {
		r = &followReader{ctx: ctx, f: f, finished: req.Finished}
	}
	if req.Limit > 0 {
		r = io.LimitReader(r, int64(req.Limit))
	}
	return struct {
		io.Reader
		io.Closer
	}{r, f}, nil
}

// followReader reads a growing file until its writer has exited and
// everything written has been read, or the client goes away.
type followReader struct {
	ctx      context.Context
	f        *os.File
	finished <-chan struct{}
	drained  bool
}

func (r *followReader) Read(p []byte) (int, error) {
	for {
		n, err := r.f.Read(p)
		if n > 0 || (err != nil && !errors.Is(err, io.EOF)) {
			return n, err
		}
		if r.drained {
			return 0, io.EOF
		}
		select {
		case <-r.finished:
			// One more read picks up what was written before the exit.
			r.drained = true
		case <-r.ctx.Done():
			return 0, io.EOF
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// ReadTerminationMessage implements terminationMessagePath for host
// processes: the file is read only if it lies under the agent's state
// directory (a pod must not make the agent read arbitrary host files), and
// the kubelet's 4 KiB cap applies.
func ReadTerminationMessage(path, stateDir string) string {
	if path == "" {
		return ""
	}
	rel, err := filepath.Rel(stateDir, filepath.Clean(path))
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return ""
	}
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	b, _ := io.ReadAll(io.LimitReader(f, 4096))
	return string(b)
}
