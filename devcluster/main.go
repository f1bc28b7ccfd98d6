// Command devcluster runs a real Kubernetes control plane on loopback, with
// nodes whose pods are local processes: for longtask's demo, tests and
// benchmarks. See README.md. Not for production: pods are not isolated.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"k8s.io/component-base/version"
	apiserver "k8s.io/kubernetes/cmd/kube-apiserver/app"
	controllermanager "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	kubeproxy "k8s.io/kubernetes/cmd/kube-proxy/app"
	scheduler "k8s.io/kubernetes/cmd/kube-scheduler/app"
	kubelet "k8s.io/kubernetes/cmd/kubelet/app"

	"longtask.dev/devcluster/internal/cluster"
	"longtask.dev/devcluster/internal/cnode"
	"longtask.dev/devcluster/internal/etcd"
	"longtask.dev/devcluster/internal/node"
)

const usage = `usage:
  devcluster up --dir DIR [--nodes N] [--node-cpu CPU] [--node-memory MEM] [--image REF=PATH]... [--audit] [--profiling]
  devcluster up --dir DIR --runtime containerd [--nodes N] [--audit]
  devcluster load --dir DIR ARCHIVE...    (container nodes: import docker-archive or OCI image tars)
  devcluster kueue --dir DIR [--timeout D]   (install and start Kueue on a running devcluster)
  devcluster down --dir DIR
  devcluster restart --dir DIR [--kill] COMPONENT   (etcd, apiserver, controller-manager, scheduler, node, coredns, kueue-manager)
  devcluster node stop --dir DIR NODE     (container nodes: kill the node at once, as a crashed machine)
  devcluster node start --dir DIR [--timeout D] [--system-reserved-memory Q] [--eviction-hard SIGNAL=Q]... NODE
                                          (boot a stopped node again, empty; returns once Ready)
  devcluster net cut --dir DIR [--seconds N] NODE | --pod NAMESPACE/NAME   (drop its packets; heal after N s)
  devcluster net heal --dir DIR NODE | --pod NAMESPACE/NAME
  devcluster version
(internal, started by up: etcd, apiserver, controller-manager, scheduler, node, cnode, kubelet, kube-proxy,
 coredns; by kueue: kueue-manager; by net cut: net-healer)`

type multi []string

func (m *multi) String() string     { return strings.Join(*m, ",") }
func (m *multi) Set(v string) error { *m = append(*m, v); return nil }

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, usage)
		os.Exit(2)
	}
	sub, args := os.Args[1], os.Args[2:]
	var err error
	switch sub {
	case "up":
		err = up(args)
	case "down":
		err = down(args)
	case "load":
		err = load(args)
	case "kueue":
		err = kueue(args)
	case cluster.KueueProc:
		err = cluster.KueueManagerMain(args)
	case "cnode":
		err = cnode.Main(args)
	case "restart":
		err = restart(args)
	case "version":
		// The wrapper script has built the binary; say what it runs.
		fmt.Println("devcluster: Kubernetes", version.Get().GitVersion)
	case "etcd":
		err = etcd.Main(args)
	case "node":
		// `node stop|start NODE` are fault verbs; the process-node agent,
		// which `up` starts as `node --flag...`, takes flags only.
		if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
			err = nodeVerb(args)
		} else {
			err = node.Main(args)
		}
	case "net":
		err = netVerb(args)
	case cluster.CoreDNSProc:
		err = cluster.CoreDNSMain(args)
	case cluster.NetHealerProc:
		err = cluster.NetHealerMain(args)
	case "apiserver":
		cmd := apiserver.NewAPIServerCommand()
		cmd.SilenceUsage = true
		cmd.SetArgs(args)
		err = cmd.Execute()
	case "controller-manager":
		cmd := controllermanager.NewControllerManagerCommand()
		cmd.SilenceUsage = true
		cmd.SetArgs(args)
		err = cmd.Execute()
	case "kubelet":
		cmd := kubelet.NewKubeletCommand(context.Background())
		cmd.SilenceUsage = true
		cmd.SetArgs(args)
		err = cmd.Execute()
	case "kube-proxy":
		cmd := kubeproxy.NewProxyCommand()
		cmd.SilenceUsage = true
		cmd.SetArgs(args)
		err = cmd.Execute()
	case "scheduler":
		cmd := scheduler.NewSchedulerCommand()
		cmd.SilenceUsage = true
		cmd.SetArgs(args)
		err = cmd.Execute()
	default:
		fmt.Fprintf(os.Stderr, "devcluster: unknown command %q\n%s\n", sub, usage)
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "devcluster %s: %v\n", sub, err)
		os.Exit(1)
	}
}

func up(args []string) error {
	fs := flag.NewFlagSet("up", flag.ContinueOnError)
	var o cluster.Options
	var images multi
	fs.StringVar(&o.Dir, "dir", "", "state directory (required)")
	fs.IntVar(&o.Nodes, "nodes", 1, "number of nodes")
	fs.StringVar(&o.NodeCPU, "node-cpu", "4", "CPU capacity of each node")
	fs.StringVar(&o.NodeMemory, "node-memory", "8Gi", "memory capacity of each node")
	fs.Var(&images, "image", "REF=PATH: containers of image REF run PATH (repeatable)")
	fs.BoolVar(&o.Audit, "audit", false, "write an API audit log (metadata of every write) to DIR/logs/audit.log")
	fs.BoolVar(&o.Profiling, "profiling", false, "serve the API server's /debug/pprof to cluster-admin (kubectl get --raw '/debug/pprof/profile?seconds=20')")
	fs.DurationVar(&o.Timeout, "timeout", 3*time.Minute, "how long to wait for the cluster to be ready")
	fs.StringVar(&o.Runtime, "runtime", cluster.RuntimeProcess, "process (pods are host processes) or containerd (pods are containers)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if o.Dir == "" {
		return fmt.Errorf("--dir is required\n%s", usage)
	}
	if o.Nodes < 1 {
		return fmt.Errorf("--nodes must be at least 1")
	}
	switch o.Runtime {
	case cluster.RuntimeProcess:
	case cluster.RuntimeContainerd:
		if len(images) > 0 || o.NodeCPU != "4" || o.NodeMemory != "8Gi" {
			return fmt.Errorf("--image, --node-cpu and --node-memory are for process nodes; container nodes report the machine's capacity and run images loaded with `devcluster load`")
		}
	default:
		return fmt.Errorf("--runtime %q: want process or containerd", o.Runtime)
	}
	for _, img := range images {
		if ref, path, ok := strings.Cut(img, "="); !ok || ref == "" || path == "" {
			return fmt.Errorf("--image %q: want REF=PATH", img)
		}
	}
	o.Images = images
	start := time.Now()
	if err := cluster.Up(o); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "devcluster up in %.1fs: export KUBECONFIG=%s/kubeconfig\n", time.Since(start).Seconds(), strings.TrimRight(o.Dir, "/"))
	return nil
}

func down(args []string) error {
	fs := flag.NewFlagSet("down", flag.ContinueOnError)
	dir := fs.String("dir", "", "state directory (required)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dir == "" {
		return fmt.Errorf("--dir is required\n%s", usage)
	}
	return cluster.Down(*dir)
}

func load(args []string) error {
	fs := flag.NewFlagSet("load", flag.ContinueOnError)
	dir := fs.String("dir", "", "state directory (required)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dir == "" || fs.NArg() == 0 {
		return fmt.Errorf("want --dir DIR and at least one image archive\n%s", usage)
	}
	start := time.Now()
	names, err := cluster.Load(*dir, fs.Args())
	if err != nil {
		return err
	}
	for _, n := range names {
		fmt.Println(n)
	}
	fmt.Fprintf(os.Stderr, "devcluster: %d archive(s) loaded into every node in %.1fs\n", fs.NArg(), time.Since(start).Seconds())
	return nil
}

func restart(args []string) error {
	fs := flag.NewFlagSet("restart", flag.ContinueOnError)
	dir := fs.String("dir", "", "state directory (required)")
	kill := fs.Bool("kill", false, "SIGKILL instead of SIGTERM")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dir == "" || fs.NArg() != 1 {
		return fmt.Errorf("want --dir DIR and one component\n%s", usage)
	}
	start := time.Now()
	if err := cluster.Restart(*dir, fs.Arg(0), *kill); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "devcluster: %s restarted in %.1fs\n", fs.Arg(0), time.Since(start).Seconds())
	return nil
}

func kueue(args []string) error {
	fs := flag.NewFlagSet("kueue", flag.ContinueOnError)
	var o cluster.KueueOptions
	fs.StringVar(&o.Dir, "dir", "", "state directory of a running devcluster (required)")
	fs.DurationVar(&o.Timeout, "timeout", 3*time.Minute, "how long to wait for Kueue to be ready")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if o.Dir == "" {
		return fmt.Errorf("--dir is required\n%s", usage)
	}
	// The wrapper script has built Kueue there (devcluster/kueue/build).
	o.BinDir = os.Getenv("DEVCLUSTER_KUEUE_BIN")
	if o.BinDir == "" {
		return fmt.Errorf("DEVCLUSTER_KUEUE_BIN is not set: run devcluster through its wrapper script devcluster/devcluster")
	}
	start := time.Now()
	version, err := cluster.Kueue(o)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "devcluster: Kueue %s ready in %.1fs (logs: %s/logs/%s.log)\n", version, time.Since(start).Seconds(), strings.TrimRight(o.Dir, "/"), cluster.KueueProc)
	return nil
}

// parseAll parses flags wherever they stand among the positional arguments
// (`node stop NODE --dir DIR` as well as `node stop --dir DIR NODE`) and
// returns the positional ones.
func parseAll(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return pos, nil
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

func nodeVerb(args []string) error {
	verb := args[0]
	fs := flag.NewFlagSet("node "+verb, flag.ContinueOnError)
	dir := fs.String("dir", "", "state directory (required)")
	timeout := fs.Duration("timeout", 2*time.Minute, "start: how long to wait for the node to be Ready")
	var tune cnode.Tuning
	fs.StringVar(&tune.SystemReservedMemory, "system-reserved-memory", "", "start: the kubelet's systemReserved memory, for this boot (shrinks allocatable)")
	fs.Func("eviction-hard", "start: SIGNAL=QUANTITY, a kubelet hard eviction threshold for this boot (repeatable)", tune.SetEvictionHard)
	pos, err := parseAll(fs, args[1:])
	if err != nil {
		return err
	}
	if *dir == "" || len(pos) != 1 {
		return fmt.Errorf("want --dir DIR and one node name\n%s", usage)
	}
	if verb == "stop" && (tune.SystemReservedMemory != "" || tune.EvictionHard != nil) {
		return fmt.Errorf("--system-reserved-memory and --eviction-hard are for node start")
	}
	start := time.Now()
	switch verb {
	case "stop":
		err = cluster.NodeStop(*dir, pos[0])
	case "start":
		err = cluster.NodeStart(*dir, pos[0], tune, *timeout)
	default:
		return fmt.Errorf("node %q: want stop or start\n%s", verb, usage)
	}
	if err != nil {
		return err
	}
	what := map[string]string{"stop": "stopped", "start": "Ready again"}[verb]
	fmt.Fprintf(os.Stderr, "devcluster: node %s %s in %.1fs\n", pos[0], what, time.Since(start).Seconds())
	return nil
}

func netVerb(args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("want net cut or net heal\n%s", usage)
	}
	verb := args[0]
	fs := flag.NewFlagSet("net "+verb, flag.ContinueOnError)
	dir := fs.String("dir", "", "state directory (required)")
	var t cluster.NetTarget
	fs.StringVar(&t.Pod, "pod", "", "NAMESPACE/NAME: cut this pod instead of a node")
	seconds := fs.Int("seconds", 0, "cut: heal after this many seconds (0: until `net heal`)")
	pos, err := parseAll(fs, args[1:])
	if err != nil {
		return err
	}
	if *dir == "" || (len(pos) == 1) == (t.Pod != "") || len(pos) > 1 {
		return fmt.Errorf("want --dir DIR and either one node name or --pod NAMESPACE/NAME\n%s", usage)
	}
	if len(pos) == 1 {
		t.Node = pos[0]
	}
	switch verb {
	case "cut":
		if *seconds < 0 {
			return fmt.Errorf("--seconds %d: want 0 or more", *seconds)
		}
		if err := cluster.NetCut(*dir, t, time.Duration(*seconds)*time.Second); err != nil {
			return err
		}
		heal := "until `net heal`"
		if *seconds > 0 {
			heal = fmt.Sprintf("for %ds", *seconds)
		}
		fmt.Fprintf(os.Stderr, "devcluster: %s cut off %s\n", t, heal)
	case "heal":
		if err := cluster.NetHeal(*dir, t); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "devcluster: %s reconnected\n", t)
	default:
		return fmt.Errorf("net %q: want cut or heal\n%s", verb, usage)
	}
	return nil
}
