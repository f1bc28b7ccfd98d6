// Command report is the only file of the test image longtask-test-scratch
// (FROM scratch: no shell, no libc). Run by the injected longtask worker, it
// reports N steps of progress a second apart through $LONGTASK_PROGRESS,
// then writes "uid=U gid=G steps=N" to $LONGTASK_RESULT. N is its first
// argument (default 3).
package main

import (
	"fmt"
	"os"
	"strconv"
	"time"
)

func main() {
	steps := 3
	if len(os.Args) > 1 {
		n, err := strconv.Atoi(os.Args[1])
		if err != nil || n < 1 {
			fmt.Fprintf(os.Stderr, "report: want a step count of at least 1, got %q\n", os.Args[1])
			os.Exit(2)
		}
		steps = n
	}
	progress, result := os.Getenv("LONGTASK_PROGRESS"), os.Getenv("LONGTASK_RESULT")
	if progress == "" || result == "" {
		fmt.Fprintln(os.Stderr, "report: LONGTASK_PROGRESS and LONGTASK_RESULT must be set (run me as a longtask Task)")
		os.Exit(2)
	}
	for i := 1; i <= steps; i++ {
		f, err := os.OpenFile(progress, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			fmt.Fprintln(os.Stderr, "report:", err)
			os.Exit(1)
		}
		fmt.Fprintf(f, "%d/%d step %d\n", i, steps, i)
		f.Close()
		fmt.Printf("step %d of %d\n", i, steps)
		time.Sleep(time.Second)
	}
	out := fmt.Sprintf("uid=%d gid=%d steps=%d", os.Getuid(), os.Getgid(), steps)
	if err := os.WriteFile(result, []byte(out), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "report:", err)
		os.Exit(1)
	}
}
