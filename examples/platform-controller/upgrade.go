package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/klog/v2"

	"github.com/udrain/udrain/eviction"
	"github.com/udrain/udrain/topology"
)

// TargetVersionLabel is the node label the upgrade step sets: the version
// a node agent (or a MachineDeployment) should bring the node to.
const TargetVersionLabel = "upgrade.example.com/target-version"

// upgradeRequest is the body POSTed to the webhook.
type upgradeRequest struct {
	Domain  string   `json:"domain"`
	Nodes   []string `json:"nodes"`
	Version string   `json:"version"`
}

// nodeUpgrade returns the UpgradeFunc of the rollout: label the domain's
// nodes with the target version (those the lister shows labelled already
// are left alone), then, when webhook is set, ask the upgrade service to
// upgrade them and wait for its answer.
func nodeUpgrade(client kubernetes.Interface, nodes corelisters.NodeLister, version, webhook string, httpClient *http.Client) eviction.UpgradeFunc {
	return func(ctx context.Context, dom topology.Domain) error {
		logger := klog.FromContext(ctx).WithValues("domain", dom.Name)
		patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]string{TargetVersionLabel: version}}})
		if err != nil {
			return err
		}
		for _, n := range dom.Nodes {
			if node, err := nodes.Get(n); err == nil && node.Labels[TargetVersionLabel] == version {
				continue
			}
			if _, err := client.CoreV1().Nodes().Patch(ctx, n, types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
				return fmt.Errorf("labelling node %s with %s=%s: %w", n, TargetVersionLabel, version, err)
			}
		}
		logger.Info("Nodes labelled for upgrade", "nodes", dom.Nodes, "version", version)
		if webhook == "" {
			return nil
		}
		body, err := json.Marshal(upgradeRequest{Domain: dom.Name, Nodes: dom.Nodes, Version: version})
		if err != nil {
			return err
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, webhook, bytes.NewReader(body))
		if err != nil {
			return fmt.Errorf("upgrade webhook %s: %w", webhook, err)
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := httpClient.Do(req)
		if err != nil {
			return fmt.Errorf("upgrade webhook for domain %s: %w", dom.Name, err)
		}
		defer resp.Body.Close()
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		if resp.StatusCode/100 != 2 {
			return fmt.Errorf("upgrade webhook for domain %s answered %s: %s", dom.Name, resp.Status, bytes.TrimSpace(msg))
		}
		logger.Info("Upgrade webhook done", "status", resp.StatusCode)
		return nil
	}
}
