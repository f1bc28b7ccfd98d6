// Command probe is the one program of the container-node tests' image
// (devcluster/e2e/nodes), built static so the image needs no other file:
//
//	probe sleep          wait for SIGTERM
//	probe resolve NAME   print NAME's addresses, as the pod's resolver finds them
//	probe dial ADDR      every 500 ms, connect to ADDR (host:port) and print
//	                     "up" or "down" whenever that changes
//	probe fill FAST MAX  take FAST MiB of memory at once, then 10 MiB/s up to
//	                     MAX MiB, and hold it
package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		fail("usage: probe sleep | resolve NAME | dial ADDR")
	}
	switch os.Args[1] {
	case "sleep":
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
		defer stop()
		<-ctx.Done()
	case "resolve":
		if len(os.Args) != 3 {
			fail("usage: probe resolve NAME")
		}
		addrs, err := net.LookupHost(os.Args[2])
		if err != nil {
			fail(err.Error())
		}
		fmt.Println(strings.Join(addrs, " "))
	case "dial":
		if len(os.Args) != 3 {
			fail("usage: probe dial ADDR")
		}
		last := ""
		for {
			state := "up"
			c, err := net.DialTimeout("tcp", os.Args[2], 400*time.Millisecond)
			if err != nil {
				state = "down"
			} else {
				c.Close()
			}
			if state != last {
				fmt.Println(time.Now().UTC().Format(time.RFC3339), state)
				last = state
			}
			time.Sleep(500 * time.Millisecond)
		}
	case "fill":
		var fast, max int
		if len(os.Args) != 4 {
			fail("usage: probe fill FAST MAX")
		}
		if _, err := fmt.Sscan(os.Args[2]+" "+os.Args[3], &fast, &max); err != nil {
			fail(err.Error())
		}
		var held [][]byte
		for mib := 1; mib <= max; mib++ {
			b := make([]byte, 1<<20)
			for i := 0; i < len(b); i += 4096 {
				b[i] = 1 // touched, so it counts in the working set
			}
			held = append(held, b)
			if mib%10 == 0 {
				fmt.Println(mib, "MiB")
			}
			if mib > fast {
				time.Sleep(100 * time.Millisecond)
			}
		}
		fmt.Println("holding", len(held), "MiB")
		select {}
	default:
		fail("unknown command " + os.Args[1])
	}
}

func fail(msg string) {
	fmt.Fprintln(os.Stderr, "probe:", msg)
	os.Exit(1)
}
