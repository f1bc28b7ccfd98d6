package cluster

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// waitReady returns once n nodes are Ready and the default namespace has its
// service account (pods are refused until it exists).
func waitReady(ctx context.Context, kubeconfig string, n int, watch []*running) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	last := "nothing checked yet"
	for {
		for _, r := range watch {
			select {
			case err := <-r.exited:
				return fmt.Errorf("%s exited during startup (%v); end of %s:\n%s", r.proc.Name, err, r.proc.Log, tail(r.proc.Log, 25))
			default:
			}
		}
		if err := ready(ctx, cs, n); err != nil {
			last = err.Error()
		} else {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("timed out waiting for the cluster: %s", last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func ready(ctx context.Context, cs *kubernetes.Clientset, n int) error {
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	readyCount := 0
	for _, node := range nodes.Items {
		for _, c := range node.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				readyCount++
			}
		}
	}
	if readyCount < n {
		return fmt.Errorf("%d of %d nodes Ready", readyCount, n)
	}
	if _, err := cs.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{}); err != nil {
		return fmt.Errorf("default service account: %w", err)
	}
	return nil
}
