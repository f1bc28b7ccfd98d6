package cluster

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"
)

// KueueManagerMain runs Kueue's manager (--bin) with the given arguments
// (after --), in a mount namespace of its own where the directory --certs
// is bound over the fixed path Kueue reads its metrics certificate from, so
// the host's /etc stays as it is (only an empty mount point is made) and
// clusters do not share it. Needs root, as container nodes do.
func KueueManagerMain(args []string) error {
	fs := flag.NewFlagSet(KueueProc, flag.ContinueOnError)
	bin := fs.String("bin", "", "Kueue's manager binary")
	certs := fs.String("certs", "", "directory with tls.crt and tls.key")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *bin == "" || *certs == "" {
		return fmt.Errorf("--bin and --certs are required")
	}
	if err := os.MkdirAll(kueueMetricsCertDir, 0o755); err != nil {
		return fmt.Errorf("mount point %s (Kueue needs root here): %w", kueueMetricsCertDir, err)
	}
	// The new namespace is this thread's; exec keeps it for the manager.
	runtime.LockOSThread()
	if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
		return fmt.Errorf("new mount namespace: %w", err)
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make mounts private: %w", err)
	}
	if err := unix.Mount(*certs, kueueMetricsCertDir, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("bind %s over %s: %w", *certs, kueueMetricsCertDir, err)
	}
	return syscall.Exec(*bin, append([]string{*bin}, fs.Args()...), os.Environ())
}
