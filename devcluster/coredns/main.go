// Command coredns is CoreDNS, built from its own module with only the
// plugins a devcluster's cluster DNS uses (the kubernetes plugin and what
// kubeadm's Corefile puts around it), so the build leaves out the cloud
// providers' SDKs that CoreDNS's full plugin list brings in. Everything
// else is CoreDNS's own main, coremain.Run.
package main

import (
	"fmt"
	"os"

	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/loadbalance"
	_ "github.com/coredns/coredns/plugin/ready"
)

// directives is the plugin chain in execution order: the order of these
// plugins in CoreDNS's own plugin.cfg.
var directives = []string{"bind", "ready", "health", "errors", "loadbalance", "cache", "kubernetes"}

func main() {
	if err := dnsserver.SetDirectives(directives); err != nil {
		fmt.Fprintln(os.Stderr, "coredns:", err)
		os.Exit(1)
	}
	coremain.Run()
}
