// Command pause is the sandbox ("infra") container of a devcluster container
// node's pods: it holds the pod's namespaces, reaps the zombies it inherits
// when the pod shares one process namespace, and exits on SIGTERM or SIGINT.
// Built statically, it is the only file of the image devcluster assembles.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGCHLD)
	for s := range sigs {
		if s != syscall.SIGCHLD {
			os.Exit(0)
		}
		for {
			var status syscall.WaitStatus
			pid, err := syscall.Wait4(-1, &status, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
}
