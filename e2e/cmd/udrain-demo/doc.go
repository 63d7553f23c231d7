// Command udrain-demo sets up the workload of "make demo" (hack/demo.sh) on
// the local control plane (hack/cluster.sh): fake GPU nodes in upgrade
// domains and a multi-host inference workload of real LeaderWorkerSets,
// built with package [github.com/udrain/udrain/e2e/fixture]. It is a
// helper of the demo script, not a tool to run against a real cluster: its
// nodes are kwok's, and "deploy" deletes the namespace and the node pool it
// is given before it creates them again.
//
//	udrain-demo deploy [--namespace udrain-demo] [--pool demo] [--uds 3] [--nodes-per-ud 2] [--groups 3] [--group-size 4]
//	                   [--workload lws|ray] [--kuberay-dir DIR]
//	udrain-demo wait   [--namespace udrain-demo] [--groups 3] [--workload lws|ray] [--timeout 3m]
//	udrain-demo watch  [--namespace udrain-demo] [--pool demo] [--groups 3] [--workload lws|ray]
//	udrain-demo lws-manager --lws-dir DIR --work-dir DIR
//
// lws-manager runs the LeaderWorkerSet manager (v0.10.0, the folder
// hack/lws.sh prints) out of cluster until SIGINT or SIGTERM, as the e2e
// testbed does (testbed.LWSSetup): its CRDs applied, its configuration and a
// serving certificate for 127.0.0.1 in --work-dir, its webhooks registered
// with url clientConfigs; it prints "LeaderWorkerSet manager ready" once the
// API server calls them, and deletes the webhook configurations when it
// stops (a cluster left with webhooks nobody serves refuses every
// LeaderWorkerSet pod).
//
// deploy resets and creates: the namespace, UDS x NODES-PER-UD nodes with
// eight NVIDIA H100 each (domains <pool>-ud0, <pool>-ud1, ...), GROUPS
// LeaderWorkerSets vllm-a, vllm-b, ... of one group of GROUP-SIZE pods each
// (a leader and its workers, four GPUs each; a group fills the two nodes of
// one domain) with LWS's exclusive topology on the domain label, leaders
// declaring the readiness gate udrain.dev/group-ready, and a
// PodDisruptionBudget vllm-leaders over their leaders with minAvailable
// GROUPS-1; the manager must run. wait returns once every group is whole and its
// leader Ready (which takes the readiness-gate controller, "udrain
// readiness-gate-controller") and the budget counts every group healthy; it
// prints a line whenever that progresses. watch records every event of the
// workload's pods until SIGINT or SIGTERM, then prints what they went
// through: disruptions per group, the fewest healthy groups at any moment,
// the order of evictions per domain; it exits 1 if fewer groups than the
// budget keeps were healthy at some moment, or a worker was evicted before
// its domain's leader. It watches the pods itself, so the demo's claim does
// not rest on udrain's own report.
//
// With --workload ray the groups are RayClusters that a real KubeRay
// operator runs (the demo script starts it): deploy installs KubeRay's CRDs
// from --kuberay-dir (the folder hack/kuberay.sh prints), a
// PodDisruptionBudget over the heads, and GROUPS RayClusters of a head and
// GROUP-SIZE-1 hosts of eight GPUs (default 3: a cluster fills a domain);
// the heads declare the readiness gate, and a group is a cluster, its leader
// the head, as udrain's topology package groups them.
//
// The kubeconfig is --kubeconfig, else $KUBECONFIG, else ~/.kube/config.
// Exit codes: 0 done, 1 error, 2 usage.
package main
