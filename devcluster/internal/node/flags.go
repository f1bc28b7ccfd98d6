package node

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"longtask.dev/devcluster/internal/node/kubelet"
)

type options struct {
	kubeconfig, cpu, memory, stateDir, listenAddress string
	nodes, pods, port                                int
	images                                           *kubelet.ImageMap
}

// imageFlag is the repeatable --image REF=PATH.
type imageFlag struct{ m *kubelet.ImageMap }

func (f imageFlag) String() string { return "" }

// Set parses one REF=PATH flag value; PATH is made absolute so that a
// container's working directory does not change what it means.
func (f imageFlag) Set(flagValue string) error {
	ref, path, ok := strings.Cut(flagValue, "=")
	if !ok || ref == "" || path == "" {
		return fmt.Errorf("--image %q: want REF=PATH", flagValue)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return fmt.Errorf("--image %q: %w", flagValue, err)
	}
	if _, err := os.Stat(abs); err != nil {
		// Not fatal: the program may be built after the cluster starts.
		fmt.Fprintf(os.Stderr, "node: warning: --image %s: %v\n", ref, err)
	}
	f.m.Add(ref, abs)
	return nil
}

func parseFlags(args []string) (options, error) {
	o := options{images: kubelet.NewImageMap()}
	fs := flag.NewFlagSet("node", flag.ContinueOnError)
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "admin kubeconfig (required)")
	fs.IntVar(&o.nodes, "nodes", 1, "number of Nodes to register: devcluster-node-0..N-1")
	fs.StringVar(&o.cpu, "cpu", "4", "CPU capacity of each node")
	fs.StringVar(&o.memory, "memory", "8Gi", "memory capacity of each node")
	fs.IntVar(&o.pods, "pods", 110, "maximum pods per node")
	fs.Var(imageFlag{o.images}, "image", "REF=PATH: containers of image REF without a command run the program PATH (repeatable)")
	fs.StringVar(&o.stateDir, "state-dir", filepath.Join(os.TempDir(), "devcluster-node"), "per-pod working files: logs, tokens, kubeconfigs")
	fs.StringVar(&o.listenAddress, "listen-address", "127.0.0.1", "loopback address of the kubelet HTTPS API (logs)")
	fs.IntVar(&o.port, "port", 0, "port of the kubelet HTTPS API, shared by all nodes (0: pick a free one)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	switch {
	case fs.NArg() > 0:
		return o, fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	case o.kubeconfig == "":
		return o, errors.New("--kubeconfig is required")
	case o.nodes < 1:
		return o, errors.New("--nodes must be at least 1")
	case o.pods < 1:
		return o, errors.New("--pods must be at least 1")
	}
	return o, nil
}

// nodeCapacity is what every node registers as capacity and allocatable.
func nodeCapacity(cpu, memory string, pods int) (corev1.ResourceList, error) {
	c, err := resource.ParseQuantity(cpu)
	if err != nil {
		return nil, fmt.Errorf("--cpu %q: %w", cpu, err)
	}
	m, err := resource.ParseQuantity(memory)
	if err != nil {
		return nil, fmt.Errorf("--memory %q: %w", memory, err)
	}
	return corev1.ResourceList{
		corev1.ResourceCPU:              c,
		corev1.ResourceMemory:           m,
		corev1.ResourcePods:             *resource.NewQuantity(int64(pods), resource.DecimalSI),
		corev1.ResourceEphemeralStorage: resource.MustParse("100Gi"),
	}, nil
}
