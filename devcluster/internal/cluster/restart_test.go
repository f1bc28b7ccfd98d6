package cluster

import (
	"net"
	"strings"
	"testing"
	"time"
)

// A port held on the component's --bind-address is seen as busy, even when
// 127.0.0.1 has it free; once released it is free again.
func TestWaitPortsFreeUsesBindAddress(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Skipf("no 127.0.0.2 here: %v", err)
	}
	_, port, _ := net.SplitHostPort(l.Addr().String())
	args := []string{"--bind-address=127.0.0.2", "--secure-port=" + port}
	err = waitPortsFree(args, 300*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "127.0.0.2:"+port) {
		t.Fatalf("held port reported free: %v", err)
	}
	l.Close()
	if err := waitPortsFree(args, 2*time.Second); err != nil {
		t.Fatalf("released port still busy: %v", err)
	}
}
